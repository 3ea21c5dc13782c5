"""How much of a worker client metadata documents may take: at most MAX_AT_ONCE fetches at once,
and no second try of what failed within FAILURE_MEMORY_SECONDS.

A fetch holds one of the worker's few request threads for up to its deadline (3 s,
app.oauth.documents), at a URL anyone may name: without a cap, requests naming a host that
never answers held every thread and stopped ingest. So a request that needs a fetch while
MAX_AT_ONCE run is answered at once (BusyError: "try again in a moment"), never kept waiting,
and what failed is answered at once from memory for a minute:
- a host whose fetch failed on the way (not resolving, a non-global address, no connection, a
  TLS failure, the deadline), by its name: that host is not contacted again meanwhile, whatever
  path or port a URL names;
- a URL whose host answered with what is not a usable document (an HTTP error, too large, not
  JSON, metadata not valid), by the URL only: a host that answers at once costs no thread for
  long, and one client's broken document on a shared host must not refuse the documents of
  every other client there.
Both are per worker (each worker tries once a minute at most) and hold at most MAX_REMEMBERED
entries, the oldest forgotten first.
"""
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from time import monotonic

MAX_AT_ONCE = 2
FAILURE_MEMORY_SECONDS = 60.0
MAX_REMEMBERED = 4096


class BusyError(Exception):
    """MAX_AT_ONCE fetches run in this worker already."""


class Memory:
    """Keys remembered until a moment (time.monotonic, read as this module's `monotonic`)."""

    def __init__(self) -> None:
        self._until: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, key: str) -> None:
        with self._lock:
            self._until.pop(key, None)
            self._until[key] = monotonic() + FAILURE_MEMORY_SECONDS
            while len(self._until) > MAX_REMEMBERED:
                self._until.popitem(last=False)

    def holds(self, key: str) -> bool:
        with self._lock:
            until = self._until.get(key)
            if until is not None and until <= monotonic():
                del self._until[key]
                until = None
            return until is not None

    def forget_all(self) -> None:
        with self._lock:
            self._until.clear()


failed_hosts = Memory()
failed_urls = Memory()
_slots = threading.BoundedSemaphore(MAX_AT_ONCE)


@contextmanager
def slot() -> Iterator[None]:
    """One of the worker's MAX_AT_ONCE fetches for the block; BusyError when none is free."""
    if not _slots.acquire(blocking=False):
        raise BusyError
    try:
        yield
    finally:
        _slots.release()
