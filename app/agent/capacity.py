"""How many tool calls one worker process runs at once: half of its threads (GUNICORN_THREADS,
or GRANIAN_BLOCKING_THREADS; 4 by default, so 2), so that agents, however many keys or batches
they come with, never hold every thread of a worker while ingest requests wait in its queue
(gthread accepts a connection whether or not a thread is free).

A call that finds no free slot is answered at once with a tool error saying to call again
(BUSY), not kept waiting: a waiting call holds a thread as a running one does. A JSON-RPC
batch (app.agent.batch) runs its calls one after another in the slot its first call took
(`one_slot`), as one call would: they do not race other requests for it between two members.

Why: without the bound, a few POSTs of heavy `query` calls hold every thread of the workers,
and ingest requests wait for them; with it, ingest keeps being answered while they run (shown
on a live gunicorn by tests/agent/test_capacity.py).
"""
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

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
# Within `one_slot`: whether the request holds a slot, kept from one call to the next.
_kept: ContextVar[list[bool] | None] = ContextVar("kept_slot", default=None)


@contextmanager
def slot() -> Iterator[bool]:
    """Whether a call may run now: a free slot, taken until the block ends (within `one_slot`,
    until that ends)."""
    kept = _kept.get()
    if kept is not None and kept[0]:
        yield True
        return
    taken = _slots.acquire(blocking=False)
    if kept is not None:
        kept[0] = taken
        yield taken
        return
    try:
        yield taken
    finally:
        if taken:
            _slots.release()


@contextmanager
def one_slot() -> Iterator[None]:
    """The calls made within the block share one slot: the first that finds one free keeps it
    for the others, until the block ends."""
    kept = [False]
    token = _kept.set(kept)
    try:
        yield
    finally:
        _kept.reset(token)
        if kept[0]:
            _slots.release()
