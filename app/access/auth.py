"""The key decorator every blueprint shares: who is calling, for which site; and the agent
endpoint's, which takes a key or a bearer token of another issuer (OAuth, app.oauth)."""
from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass(frozen=True)
class TokenIssuer:
    """Bearer tokens that are not keys (OAuth access tokens, app.oauth.tokens): how they begin,
    the grant a valid one belongs to (None: unknown, expired or revoked), and the
    WWW-Authenticate challenge of a 401 (`invalid_token`: a credential was sent)."""

    prefix: Callable[[], str]
    grant_of: Callable[[str], Any]
    challenge: Callable[[bool], str]


def require_credentials(kinds: tuple[str, ...], issuer: TokenIssuer
                        ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a view: set g.site (and g.key or g.grant) from a key of `kinds` or a token of
    `issuer`; a 401 carries the issuer's challenge."""

    def decorate(view: Callable[..., Any]) -> Callable[..., Any]:
        @wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            sent = presented_key(allow_x_api_key=False)
            try:
                if sent is not None and sent.startswith(issuer.prefix()):
                    _authenticate_token(sent, issuer)
                else:
                    authenticate(kinds)
            except ApiError as error:
                if error.status == 401:
                    error.headers["WWW-Authenticate"] = issuer.challenge(bool(sent))
                raise
            return view(*args, **kwargs)

        wrapper.key_kinds = kinds  # read by the OpenAPI generator
        return wrapper

    return decorate


def _authenticate_token(token: str, issuer: TokenIssuer) -> None:
    # As for keys: a client whose tokens keep finding nothing is refused before the database is
    # asked again. No cache: a revoked grant stops working at once.
    refuse_if_spent(BAD_KEY)
    grant = issuer.grant_of(token)
    if grant is None:
        count_against(BAD_KEY)
        raise ApiError(401, "Invalid access token: unknown, expired or revoked.")
    g.grant = grant
    g.site = grant.site


def init_app(app: Flask) -> None:
    app.extensions["egis_keys"] = KeyCache(ttl=app.config["KEY_CACHE_SECONDS"])
