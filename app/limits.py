"""Rate limits (flask-limiter). The values are configuration; these are their names.

Storage comes from EGIS_RATELIMIT_STORAGE_URI: `memory://` counts per worker process, so with
several gunicorn workers use Redis (`redis://127.0.0.1:6379`) for one shared count.
"""
import time

from flask import Flask, current_app, g
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from limits.storage import MemoryStorage

PER_KEY = "RATE_LIMIT_KEY"  # every ingest endpoint, counted per API key
PER_IP = "RATE_LIMIT_IP"  # tracking endpoints, counted per client IP
VALIDATE = "RATE_LIMIT_VALIDATE"  # /api/validate, per client IP

limiter = Limiter(key_func=get_remote_address)


def _configured(name: str):
    return lambda: current_app.config[name]


def _key_id() -> str:
    return f"key:{g.key.id}"


# Shared scopes: one budget per key (and per IP) across all the endpoints they decorate.
per_key = limiter.shared_limit(_configured(PER_KEY), scope="per-key", key_func=_key_id)
per_ip = limiter.shared_limit(_configured(PER_IP), scope="per-ip")
validate_per_ip = limiter.limit(_configured(VALIDATE))


class SweepingMemoryStorage(MemoryStorage):
    """limits' memory storage, without a new thread every 10 ms.

    The stock storage expires keys from a threading.Timer that it restarts on every hit once
    the previous one (10 ms) has fired: under load that is a thread start per request, which
    cost a fifth of a worker's CPU in bench/ingest.py. Counters already expire lazily on read;
    here the sweep of stale keys runs inline, at most once a second.
    """

    STORAGE_SCHEME = ["egis-memory"]  # noqa: RUF012 - the type limits declares
    SWEEP_INTERVAL_SECONDS = 1.0

    def __init__(self, uri: str | None = None, wrap_exceptions: bool = False, **options: str):
        super().__init__(uri, wrap_exceptions=wrap_exceptions, **options)
        self.timer.cancel()
        self._next_sweep = 0.0

    def _MemoryStorage__schedule_expiry(self) -> None:  # noqa: N802 - overrides a mangled name
        now = time.monotonic()
        if now >= self._next_sweep:
            self._next_sweep = now + self.SWEEP_INTERVAL_SECONDS
            self._MemoryStorage__expire_events()


def retry_after_seconds() -> int:
    """Seconds until the breached limit's window resets (for a 429's Retry-After)."""
    breached = limiter.current_limit
    if breached is None:
        return 1
    return max(1, int(breached.reset_at - time.time()))


def init_app(app: Flask) -> None:
    uri = app.config["RATELIMIT_STORAGE_URI"]
    if uri.startswith("memory://"):
        app.config["RATELIMIT_STORAGE_URI"] = "egis-memory://" + uri.removeprefix("memory://")
    limiter.init_app(app)
    # Only decorated views are limited (there are no default or application-wide limits), yet
    # flask-limiter also walks its limit resolution in before_request for every request: half
    # its cost on /api/events, and all of it on /healthz. Drop that hook; the decorators check.
    hooks = app.before_request_funcs.get(None, [])
    if limiter._check_request_limit in hooks:  # absent when RATELIMIT_ENABLED is off
        hooks.remove(limiter._check_request_limit)
