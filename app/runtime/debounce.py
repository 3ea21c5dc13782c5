"""One debounced timer for the work a worker does behind its requests: the ingest tally's writes
(app.runtime.tally) and the rollups' merges (app.rollups.timer)."""
import threading
from collections.abc import Callable

from app.runtime import background


class Debounced:
    """Runs `work` in a daemon thread `interval` seconds after the first `poke` since it last
    ran: one run pending at a time, however many requests poke meanwhile, and no thread while
    nobody pokes. `work` answers whether it is done; when it is not (held up, the database
    failed) it runs again an interval later."""

    def __init__(self, interval: float, work: Callable[[], bool]) -> None:
        self._interval = interval
        self._work = work
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def poke(self) -> None:
        with self._lock:
            if self._timer is None:
                self._timer = background.later(self._interval, self._run)

    def _run(self) -> None:
        with self._lock:
            self._timer = None
        if not self._work():
            self.poke()
