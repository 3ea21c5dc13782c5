"""How many tool calls one worker process runs at once: half of its threads (GUNICORN_THREADS,
or GRANIAN_BLOCKING_THREADS; 4 by default, so 2), so that agents, however many keys or batches
they come with, never hold every thread of a worker while ingest requests wait in its queue.

A call that finds no free slot is answered at once with a tool error saying to call again
(BUSY), not kept waiting: a waiting call holds a thread as a running one does. Measured on a
live gunicorn (2 workers of 4 threads, SQLite): eight POSTs of 100 heavy `query` calls each,
without this bound, held all eight threads for 25 s, and an ingest request sent meanwhile was
answered only when they ended (24.3 s); tests/agent/test_capacity.py replays it.
"""
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

BUSY = ("egis is answering as many tool calls as it runs at once ({count} per worker process); "
        "call again in a moment.")


def calls_at_once() -> int:
    """Half of a worker's threads, at least 1."""
    try:
        threads = int(os.environ.get("GUNICORN_THREADS")
                      or os.environ.get("GRANIAN_BLOCKING_THREADS") or "4")
    except ValueError:
        threads = 4
    return max(1, threads // 2)


CALLS_AT_ONCE = calls_at_once()
_slots = threading.BoundedSemaphore(CALLS_AT_ONCE)


@contextmanager
def slot() -> Iterator[bool]:
    """Whether a call may run now (a free slot, taken until the block ends)."""
    taken = _slots.acquire(blocking=False)
    try:
        yield taken
    finally:
        if taken:
            _slots.release()
