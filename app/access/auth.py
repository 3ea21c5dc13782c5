"""The key decorator every blueprint shares: who is calling, for which site."""
from collections.abc import Callable
from functools import wraps
from typing import Any

from flask import Flask, current_app, g, request

from app.access.keys import KeyCache, kind_of
from app.web.errors import ApiError
from app.web.limits import BAD_KEY, count_against, refuse_if_spent
from models.api_key import READ, SERVER, WRITE

KIND_NAMES = {WRITE: "a write (tracking) key", SERVER: "a server key", READ: "a read key"}


def presented_key(allow_x_api_key: bool) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    if allow_x_api_key:
        token = request.headers.get("X-API-Key", "").strip()
        if token:
            return token
    return None


def authenticate(kinds: tuple[str, ...]) -> None:
    """Set g.key and g.site from the request's key, or raise 401/403."""
    allow_x_api_key = WRITE in kinds
    key = presented_key(allow_x_api_key)
    if key is None:
        raise ApiError(401, _missing_key_message(allow_x_api_key))
    announced = kind_of(key, current_app.config)
    # A client whose keys keep costing a query that finds nothing is refused before the
    # database is asked again (bench/README.md, "Refused requests"). A key already known to be
    # unknown costs no query and is answered 401 as often as it comes, so a tracker with a
    # wrong key stops instead of retrying a 429.
    record = (current_app.extensions["egis_keys"].lookup(
        key, before_query=lambda: refuse_if_spent(BAD_KEY),
        on_miss=lambda: count_against(BAD_KEY)) if announced else None)
    if record is None:
        raise ApiError(401, "Invalid API key: unknown or revoked.")
    if record.kind not in kinds:
        wanted = " or ".join(KIND_NAMES[k] for k in kinds)
        raise ApiError(403, f"This endpoint takes {wanted}; {KIND_NAMES[record.kind]} was given.")
    g.key = record
    g.site = record.site


def _missing_key_message(allow_x_api_key: bool) -> str:
    if allow_x_api_key:
        return "Missing API key: send it as Authorization: Bearer <key> or X-API-Key."
    if request.headers.get("X-API-Key", "").strip():
        # The usual slip with a server key: the tracking endpoints' header.
        return ("This endpoint does not read X-API-Key: send the server key as "
                "Authorization: Bearer <key>.")
    return "Missing API key: send it as Authorization: Bearer <key>."


def require_key(*kinds: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a view: only keys of `kinds` may call it (X-API-Key only where write keys may)."""

    def decorate(view: Callable[..., Any]) -> Callable[..., Any]:
        @wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            authenticate(kinds)
            return view(*args, **kwargs)

        wrapper.key_kinds = kinds  # read by the OpenAPI generator for security schemes
        return wrapper

    return decorate


def init_app(app: Flask) -> None:
    app.extensions["egis_keys"] = KeyCache(ttl=app.config["KEY_CACHE_SECONDS"])
