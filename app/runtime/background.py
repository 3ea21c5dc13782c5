"""What a worker does later, off the request: a daemon timer, and a database connection of the
thread's own (app.runtime.tally's writes, app.rollups' merges)."""
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from models import database


def later(interval: float, call: Callable[[], None]) -> threading.Timer:
    """Run `call` in a thread of its own after `interval` seconds; a daemon, so that it never
    holds up a worker that stops."""
    timer = threading.Timer(interval, call)
    timer.daemon = True
    timer.start()
    return timer


@contextmanager
def own_connection() -> Iterator[None]:
    """A connection for the block when the thread has none (a timer's thread, a worker on its
    way out), closed after it; the thread's own otherwise."""
    opened = database.is_closed()
    if opened:
        database.connect()
    try:
        yield
    finally:
        if opened and not database.is_closed():
            database.close()
