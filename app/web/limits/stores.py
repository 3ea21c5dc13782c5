"""Where the limits count: flask-limiter's storage (memory per worker, or Redis shared), its
health (fail open while it is down), and one round trip per request in Redis."""
import logging
import threading
import time
from collections.abc import Callable

from flask import Flask
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from limits import RateLimitItem
from limits.storage import MemoryStorage, RedisStorage
from limits.strategies import FixedWindowRateLimiter

log = logging.getLogger(__name__)

limiter = Limiter(key_func=get_remote_address)


Counter = tuple[RateLimitItem, tuple[str, ...]]  # a limit's item and this request's identity


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


def fail_open(ask: Callable[[], Counter | None]) -> Counter | None:
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


counting: OneByOne | RedisCounters = OneByOne()
store_is_shared = False  # the counters live outside this process (Redis, ...)


def retry_after(item: RateLimitItem, keys: tuple[str, ...]) -> int:
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
    global counting, store_is_shared
    store_is_shared = not isinstance(limiter.storage, MemoryStorage)
    # Only a single Redis server: in a cluster the keys of one request may live on different
    # nodes (one script cannot count them), and other strategies count differently.
    counting = (RedisCounters(limiter.storage) if type(limiter.storage) is RedisStorage
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
