"""Rate limits: flask-limiter's storage and strategy, checked by one thin decorator.

flask-limiter is configured from the app config as usual (EGIS_RATELIMIT_STORAGE_URI: `memory://`
counts per worker process, so with several gunicorn workers use Redis, `redis://127.0.0.1:6379`,
for one shared count; RATELIMIT_ENABLED, RATELIMIT_KEY_PREFIX, the fixed-window strategy). Views
are guarded by `limited(...)`, which hits its rate limiter (`Limiter.limiter`) directly: the
stock decorator re-resolves its limit registry and re-parses the limit strings on every request,
which was a fifth of the CPU of a one-event POST /api/events (bench/README.md).
"""
import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from flask import Flask, current_app, g
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from limits import RateLimitItem, parse_many
from limits.storage import MemoryStorage

from app.errors import ApiError
from models.ingest_tally import REJECTED_429

log = logging.getLogger(__name__)

limiter = Limiter(key_func=get_remote_address)


@dataclass(frozen=True)
class RateLimit:
    """A named limit: its value is the config entry `setting` (e.g. "6000/minute"); one budget
    per `identity()` within `scope`, shared by every view the limit guards."""

    setting: str
    scope: str
    identity: Callable[[], str]

    def hit(self) -> None:
        """Count this request; raise 429 when it is over the limit."""
        for item in _parse(current_app.config[self.setting]):
            keys = _counter_keys(self.scope, self.identity())
            if not _hit(item, keys):
                raise ApiError(429, f"Rate limit exceeded ({item}); retry after the Retry-After "
                                    "delay.", {"Retry-After": str(_retry_after(item, keys))},
                               tally_reason=REJECTED_429)


def _key_id() -> str:
    return str(g.key.id)


PER_KEY = RateLimit("RATE_LIMIT_KEY", "per-key", _key_id)  # every ingest endpoint
PER_IP = RateLimit("RATE_LIMIT_IP", "per-ip", get_remote_address)  # tracking endpoints
VALIDATE = RateLimit("RATE_LIMIT_VALIDATE", "validate", get_remote_address)  # /api/validate
MCP = RateLimit("RATE_LIMIT_MCP", "mcp", _key_id)  # /api/mcp, per server key


def limited(*limits: RateLimit) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a view: each of `limits` counts the request, in order."""

    def decorate(view: Callable[..., Any]) -> Callable[..., Any]:
        @wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if limiter.enabled:
                for limit in limits:
                    limit.hit()
            return view(*args, **kwargs)

        return wrapper

    return decorate


@functools.lru_cache(maxsize=64)
def _parse(value: str) -> tuple[RateLimitItem, ...]:
    return tuple(parse_many(value))


def _counter_keys(scope: str, identity: str) -> tuple[str, ...]:
    prefix = current_app.config.get("RATELIMIT_KEY_PREFIX")
    return (prefix, scope, identity) if prefix else (scope, identity)


def _hit(item: RateLimitItem, keys: tuple[str, ...]) -> bool:
    try:
        return limiter.limiter.hit(item, *keys)
    except Exception as error:
        # A rate-limit store outage (Redis down) must not stop ingest: count nothing, allow.
        log.warning("rate limit storage unavailable: %s", type(error).__name__)
        return True


def _retry_after(item: RateLimitItem, keys: tuple[str, ...]) -> int:
    """Whole seconds until the window resets, at least 1."""
    reset_at = limiter.limiter.get_window_stats(item, *keys).reset_time
    return max(1, int(reset_at - time.time()))


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


def init_app(app: Flask) -> None:
    uri = app.config["RATELIMIT_STORAGE_URI"]
    if uri.startswith("memory://"):
        app.config["RATELIMIT_STORAGE_URI"] = "egis-memory://" + uri.removeprefix("memory://")
    limiter.init_app(app)
    _detach_request_hooks(app)


def _detach_request_hooks(app: Flask) -> None:
    """Drop flask-limiter's per-request hooks: no view uses its decorators or default limits,
    and Retry-After is set by RateLimit.hit, so they would only walk an empty registry."""
    ours = {limiter._check_request_limit, limiter._Limiter__release_context}
    for registry in (app.before_request_funcs, app.after_request_funcs,
                     app.teardown_request_funcs):
        hooks = registry.get(None, [])
        hooks[:] = [hook for hook in hooks
                    if hook not in ours and getattr(hook, "args", ()) != (limiter,)]
