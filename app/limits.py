"""Rate limits (flask-limiter). The values are configuration; these are their names.

Storage comes from EGIS_RATELIMIT_STORAGE_URI: `memory://` counts per worker process, so with
several gunicorn workers use Redis (`redis://127.0.0.1:6379`) for one shared count.
"""
from flask import Flask, current_app, g
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address

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


def init_app(app: Flask) -> None:
    limiter.init_app(app)
