"""Rate limits: the named limits, checked by one thin decorator, on flask-limiter's storage and
strategy (stores.py).

flask-limiter is configured from the app config as usual (EGIS_RATELIMIT_STORAGE_URI: `memory://`
counts per worker process, so with several gunicorn workers use Redis, `redis://127.0.0.1:6379`,
for one shared count; RATELIMIT_ENABLED, RATELIMIT_KEY_PREFIX, the fixed-window strategy). Views
are guarded by `limited(...)`, which hits its rate limiter (`Limiter.limiter`) directly: the
stock decorator re-resolves its limit registry and re-parses the limit strings on every request,
which was a fifth of the CPU of a one-event POST /api/events (bench/README.md).
"""
import functools
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from flask import current_app, g
from limits import RateLimitItem, parse_many

from app.web.errors import ApiError
from app.web.limits import stores
from app.web.limits.network import client_network, pseudonym
from app.web.limits.stores import Counter, fail_open, limiter, retry_after
from models.ingest_tally import REJECTED_429


@dataclass(frozen=True)
class RateLimit:
    """A named limit: its value is the config entry `setting` (e.g. "6000/minute"); one budget
    per `identity()` within `scope`, shared by every view the limit guards. A `personal`
    identity (a client's address) is counted under a pseudonym in a store outside the process
    (`pseudonym`)."""

    setting: str
    scope: str
    identity: Callable[[], str]
    personal: bool = False

    def counters(self) -> list[Counter]:
        """This request's counter for each of the limit's items ("6000/minute;100/second")."""
        identity = self.identity()
        if self.personal and stores.store_is_shared:
            identity = pseudonym(identity)
        keys = _counter_keys(self.scope, identity)
        return [(item, keys) for item in _parse(current_app.config[self.setting])]


def _key_id() -> str:
    return str(g.key.id)


def _agent_id() -> str:
    """An agent on /api/mcp: its key, or its OAuth grant."""
    grant = g.get("grant")
    return f"grant-{grant.id}" if grant is not None else _key_id()


PER_KEY = RateLimit("RATE_LIMIT_KEY", "per-key", _key_id)  # every ingest endpoint
# tracking endpoints; /api/validate
PER_IP = RateLimit("RATE_LIMIT_IP", "per-ip", client_network, personal=True)
VALIDATE = RateLimit("RATE_LIMIT_VALIDATE", "validate", client_network, personal=True)
MCP = RateLimit("RATE_LIMIT_MCP", "mcp", _agent_id)  # /api/mcp, per key or OAuth grant
# /oauth/* and the discovery documents, per client IP; wrong connect codes, per client IP.
OAUTH = RateLimit("RATE_LIMIT_OAUTH", "oauth", client_network, personal=True)
CONNECT_CODE = RateLimit("RATE_LIMIT_CONNECT_CODE", "connect-code", client_network,
                         personal=True)
# Dynamic client registrations (POST /oauth/register), per client IP; the daily cap in all is
# counted in the database (app.oauth.registration).
OAUTH_REGISTER = RateLimit("RATE_LIMIT_OAUTH_REGISTER", "oauth-register", client_network,
                           personal=True)
# Keys looked up in the database and found unknown or revoked, per client IP, on every endpoint
# that takes a key (app.access.auth).
BAD_KEY = RateLimit("RATE_LIMIT_BAD_KEY", "bad-key", client_network, personal=True)


def limited(*limits: RateLimit) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a view: each of `limits` counts the request, in order; the first that is over
    answers 429, and the limits after it do not count the request."""

    def decorate(view: Callable[..., Any]) -> Callable[..., Any]:
        @wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            count_against(*limits)
            return view(*args, **kwargs)

        return wrapper

    return decorate


def count_against(*limits: RateLimit) -> None:
    """Count this request on each of `limits`, in order; 429 from the first that is over (the
    limits after it do not count the request)."""
    if limiter.enabled:
        refused = _first_refused([counter for limit in limits for counter in limit.counters()])
        if refused is not None:
            raise _too_many(*refused)


@dataclass(frozen=True)
class Exceeded:
    """A limit over which a count went: its item ("300 per 1 minute") and the whole seconds
    until its window resets."""

    item: str
    retry_after: int


def count_again(limit: RateLimit) -> Exceeded | None:
    """Count one more use of `limit` by this request, which `limited` counted once already: a
    request that asks for several things, each counted as one request (the members of a
    JSON-RPC batch on /api/mcp). What is exceeded, or None; a store that fails lets it
    through."""
    if not limiter.enabled:
        return None
    refused = _first_refused(limit.counters())
    return None if refused is None else Exceeded(str(refused[0]), retry_after(*refused))


def refuse_if_spent(limit: RateLimit) -> None:
    """429 if this request's budget of `limit` is spent; counts nothing. A store that fails
    lets the request through."""
    if limiter.enabled:
        counters = limit.counters()
        spent = fail_open(lambda: next((counter for counter in counters
                                         if not limiter.limiter.test(counter[0], *counter[1])),
                                        None))
        if spent is not None:
            raise _too_many(*spent)


def _too_many(item: RateLimitItem, keys: tuple[str, ...]) -> ApiError:
    return ApiError(429, f"Rate limit exceeded ({item}); retry after the Retry-After delay.",
                    {"Retry-After": str(retry_after(item, keys))}, tally_reason=REJECTED_429)


@functools.lru_cache(maxsize=64)
def _parse(value: str) -> tuple[RateLimitItem, ...]:
    return tuple(parse_many(value))


def _counter_keys(scope: str, identity: str) -> tuple[str, ...]:
    prefix = current_app.config.get("RATELIMIT_KEY_PREFIX")
    return (prefix, scope, identity) if prefix else (scope, identity)


def _first_refused(counters: list[Counter]) -> Counter | None:
    """Count the request on each counter in order, up to the first that is over its limit;
    that one, or None. A store that fails lets the request through (fail open)."""
    return fail_open(lambda: stores.counting.first_refused(counters))
