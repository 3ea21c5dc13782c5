"""Rate limits: flask-limiter's storage and strategy, checked by one thin decorator.

flask-limiter is configured from the app config as usual (EGIS_RATELIMIT_STORAGE_URI: `memory://`
counts per worker process, so with several gunicorn workers use Redis, `redis://127.0.0.1:6379`,
for one shared count; RATELIMIT_ENABLED, RATELIMIT_KEY_PREFIX, the fixed-window strategy). Views
are guarded by `limited(...)`, which hits its rate limiter (`Limiter.limiter`) directly: the
stock decorator re-resolves its limit registry and re-parses the limit strings on every request,
which was a fifth of the CPU of a one-event POST /api/events (bench/README.md).
"""
import functools
import hashlib
import ipaddress
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from flask import Flask, current_app, g
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from limits import RateLimitItem, parse_many
from limits.storage import MemoryStorage, RedisStorage
from limits.strategies import FixedWindowRateLimiter

from app.errors import ApiError
from models.ingest_tally import REJECTED_429
from models.instance_secret import InstanceSecret

log = logging.getLogger(__name__)

limiter = Limiter(key_func=get_remote_address)


Counter = tuple[RateLimitItem, tuple[str, ...]]  # a limit's item and this request's identity


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
        if self.personal and _store_is_shared:
            identity = pseudonym(identity)
        keys = _counter_keys(self.scope, identity)
        return [(item, keys) for item in _parse(current_app.config[self.setting])]


def _key_id() -> str:
    return str(g.key.id)


def _agent_id() -> str:
    """An agent on /api/mcp: its key, or its OAuth grant."""
    grant = g.get("grant")
    return f"grant-{grant.id}" if grant is not None else _key_id()


def client_network() -> str:
    """Whom a per-IP limit counts: the client's IPv4 address, or the /64 network of its IPv6
    address. A subscriber or a host is given a whole /64 (RFC 6177), so counting each IPv6
    address apart would give one client 2**64 budgets. An IPv4 address seen through a
    dual-stack socket (::ffff:203.0.113.1) counts as that IPv4 address."""
    address = get_remote_address()
    if ":" not in address:
        return address
    try:
        ip = ipaddress.IPv6Address(address)
    except ValueError:  # not an address (a proxy's garbled X-Forwarded-For): counted as given
        return address
    if ip.ipv4_mapped:
        return str(ip.ipv4_mapped)
    return str(ipaddress.IPv6Network((ip, 64), strict=False))


def pseudonym(identity: str) -> str:
    """`identity` keyed-hashed (BLAKE2b) with the installation's secret, which lives in the
    database: a store that writes its keys to disk (a Redis snapshot) or whose keys anyone can
    list holds no client address, and every worker and host still counts a client under one
    name. An address cannot be found by hashing all 2**32 of them without the secret."""
    secret = current_app.extensions.get("egis_limit_secret")
    if secret is None:
        secret = current_app.extensions["egis_limit_secret"] = InstanceSecret.named("limits")
    return hashlib.blake2b(identity.encode(), key=secret, digest_size=16).hexdigest()


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
# that takes a key (app.auth).
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
    return None if refused is None else Exceeded(str(refused[0]), _retry_after(*refused))


def refuse_if_spent(limit: RateLimit) -> None:
    """429 if this request's budget of `limit` is spent; counts nothing. A store that fails
    lets the request through."""
    if limiter.enabled:
        counters = limit.counters()
        spent = _fail_open(lambda: next((counter for counter in counters
                                         if not limiter.limiter.test(counter[0], *counter[1])),
                                        None))
        if spent is not None:
            raise _too_many(*spent)


def _too_many(item: RateLimitItem, keys: tuple[str, ...]) -> ApiError:
    return ApiError(429, f"Rate limit exceeded ({item}); retry after the Retry-After delay.",
                    {"Retry-After": str(_retry_after(item, keys))}, tally_reason=REJECTED_429)


@functools.lru_cache(maxsize=64)
def _parse(value: str) -> tuple[RateLimitItem, ...]:
    return tuple(parse_many(value))


def _counter_keys(scope: str, identity: str) -> tuple[str, ...]:
    prefix = current_app.config.get("RATELIMIT_KEY_PREFIX")
    return (prefix, scope, identity) if prefix else (scope, identity)


class StoreHealth:
    """Whether the limit store (Redis) answers, as this worker last saw it.

    A store outage must not stop ingest: requests are allowed without being counted (fail
    open). While it is down the store is tried again only every RETRY_SECONDS, so requests do
    not each wait for a connection to fail; the outage and the recovery are logged once each.
    """

    RETRY_SECONDS = 1.0

    def __init__(self) -> None:
        self.down = False
        self._retry_at = 0.0
        self._lock = threading.Lock()

    def worth_trying(self) -> bool:
        return not self.down or time.monotonic() >= self._retry_at

    def failed(self, error: Exception) -> None:
        with self._lock:
            if not self.down:
                log.warning("rate limit store unavailable (%s): requests are allowed without "
                            "being counted until it is back", type(error).__name__)
            self.down = True
            self._retry_at = time.monotonic() + self.RETRY_SECONDS

    def answered(self) -> None:
        if self.down:
            with self._lock:
                if self.down:
                    log.warning("rate limit store is back: counting requests again")
                self.down = False


store_health = StoreHealth()


def _first_refused(counters: list[Counter]) -> Counter | None:
    """Count the request on each counter in order, up to the first that is over its limit;
    that one, or None. A store that fails lets the request through (fail open)."""
    return _fail_open(lambda: _counting.first_refused(counters))


def _fail_open(ask: Callable[[], Counter | None]) -> Counter | None:
    """The counter that `ask` finds over its limit, or None, also when the store fails (the
    request is let through) or is known to be down."""
    if not store_health.worth_trying():
        return None
    try:
        refused = ask()
    except Exception as error:  # redis-py's errors, whatever the storage raises
        store_health.failed(error)
        return None
    store_health.answered()
    return refused


class OneByOne:
    """Each counter counted by the limiter's strategy, one call each (memory, or a store the
    one-round-trip script does not serve)."""

    def first_refused(self, counters: list[Counter]) -> Counter | None:
        return next((counter for counter in counters
                     if not limiter.limiter.hit(counter[0], *counter[1])), None)


class RedisCounters:
    """A request's fixed-window counters in Redis, all in one round trip.

    limits' Redis storage counts one key per call (a Lua script, one round trip each), so the
    tracking endpoints' two limits, per key then per client IP, cost two. The script below
    counts the keys in order as limits' would, one after the other: the same keys, the same
    expiry set when a window's counter is created, the same comparison, and it stops at the
    first counter over its limit, so the limits after it do not count a refused request. With
    the limits in Redis, one round trip instead of two took gunicorn's CPU per 1-event batch
    from 1.15 to 0.98-1.02 ms and the rate of those batches up by 13-15 % (bench/README.md,
    "The limits in Redis").
    """

    SCRIPT = """
    for i, key in ipairs(KEYS) do
      local count = redis.call('incr', key)
      if count == 1 then redis.call('expire', key, ARGV[2 * i - 1]) end
      if count > tonumber(ARGV[2 * i]) then return i end
    end
    return 0
    """

    def __init__(self, storage: RedisStorage) -> None:
        self.storage = storage
        self.script = storage.get_connection().register_script(self.SCRIPT)

    def first_refused(self, counters: list[Counter]) -> Counter | None:
        keys = [self.storage.prefixed_key(item.key_for(*identity)) for item, identity in counters]
        limits = [value for item, _ in counters for value in (item.get_expiry(), item.amount)]
        refused = int(self.script(keys, limits))
        return counters[refused - 1] if refused else None


_counting: OneByOne | RedisCounters = OneByOne()
_store_is_shared = False  # the counters live outside this process (Redis, ...)


def _retry_after(item: RateLimitItem, keys: tuple[str, ...]) -> int:
    """Whole seconds until the window resets, at least 1 (the whole window if the store has
    just gone away)."""
    try:
        reset_at = limiter.limiter.get_window_stats(item, *keys).reset_time
    except Exception as error:
        store_health.failed(error)
        return item.get_expiry()
    return max(1, int(reset_at - time.time()))


def store_is_up() -> bool:
    """Whether the limit store answers now (readiness; memory storage always does)."""
    up = bool(limiter.storage.check())
    if up:
        store_health.answered()
    return up


class SweepingMemoryStorage(MemoryStorage):
    """limits' memory storage, without a new thread every 10 ms.

    The stock storage expires keys from a threading.Timer that it restarts on every hit once
    the previous one (10 ms) has fired: under load that is a thread start per request, which
    cost a fifth of a worker's CPU in bench.ingest.throughput. Counters already expire lazily
    on read; here the sweep of stale keys runs inline, at most once a second.
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


# redis-py waits forever by default: a store that stops answering would hold every request.
REDIS_TIMEOUTS = {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}


def init_app(app: Flask) -> None:
    uri = app.config["RATELIMIT_STORAGE_URI"]
    if uri.startswith("memory://"):
        app.config["RATELIMIT_STORAGE_URI"] = "egis-memory://" + uri.removeprefix("memory://")
    if uri.startswith(("redis://", "rediss://", "redis+unix://")):
        app.config["RATELIMIT_STORAGE_OPTIONS"] = {
            **REDIS_TIMEOUTS, **app.config.get("RATELIMIT_STORAGE_OPTIONS", {})}
    limiter.init_app(app)
    global _counting, _store_is_shared
    _store_is_shared = not isinstance(limiter.storage, MemoryStorage)
    # Only a single Redis server: in a cluster the keys of one request may live on different
    # nodes (one script cannot count them), and other strategies count differently.
    _counting = (RedisCounters(limiter.storage) if type(limiter.storage) is RedisStorage
                 and type(limiter.limiter) is FixedWindowRateLimiter else OneByOne())
    store_health.answered()
    _detach_request_hooks(app)


def _detach_request_hooks(app: Flask) -> None:
    """Drop flask-limiter's per-request hooks: no view uses its decorators or default limits,
    and Retry-After is set by `limited`, so they would only walk an empty registry."""
    ours = {limiter._check_request_limit, limiter._Limiter__release_context}
    for registry in (app.before_request_funcs, app.after_request_funcs,
                     app.teardown_request_funcs):
        hooks = registry.get(None, [])
        hooks[:] = [hook for hook in hooks
                    if hook not in ours and getattr(hook, "args", ()) != (limiter,)]
