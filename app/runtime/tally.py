"""Counting what was not stored, per site, UTC day and reason (models.ingest_tally).

A worker adds its counts up in memory and writes them every TALLY_FLUSH_SECONDS, in one
statement, instead of in a transaction of each refused request's own: written in the request,
a bot's request or a 429 cost a worker more than storing a 1-event batch, two thirds of it the
write (bench/README.md, "Refused requests"), and refusing is what protects the service. The
answer to a refused request promises nothing about the tally; what is at stake is the last
interval's counts of a worker that is killed (SIGKILL, out of memory): a worker that stops
writes its counts on the way out. With TALLY_FLUSH_SECONDS 0, each count is written in its
request.
"""
import logging
import threading
from datetime import date
from multiprocessing.util import Finalize

from flask import Flask, current_app
from peewee import EXCLUDED, PeeweeException

from app.runtime import background, metrics
from app.runtime.debounce import Debounced
from models import IngestTally
from models.site import utcnow

log = logging.getLogger(__name__)

TallyKey = tuple[int, date, str]  # site id, UTC day, reason


def write(counts: dict[TallyKey, int]) -> None:
    """Add `counts` to the table: one upsert, never a read-modify-write. Rows in key order, so
    that two workers writing the same rows lock them in the same order."""
    rows = [{"site_id": site_id, "day": day, "reason": reason, "count": count}
            for (site_id, day, reason), count in sorted(counts.items())]
    (IngestTally.insert_many(rows)
     .on_conflict(conflict_target=[IngestTally.site_id, IngestTally.day, IngestTally.reason],
                  update={IngestTally.count: IngestTally.count + EXCLUDED.count})
     .execute())


class TallyBuffer:
    """One app's counts not yet written, and the timer that writes them; one per process."""

    def __init__(self, interval: float) -> None:
        self._interval = interval
        self._lock = threading.Lock()
        self._counts: dict[TallyKey, int] = {}
        self._timer = Debounced(interval, self._flush_on_timer)
        self._finalizer: Finalize | None = None

    def add(self, key: TallyKey, count: int) -> None:
        """Count; written at once when the interval is 0, else by the timer."""
        if self._interval <= 0:
            write({key: count})
            return
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + count
            self._timer.poke()
            if self._finalizer is None:
                # granian's workers end through multiprocessing, which skips atexit; its
                # finalizers run there and, from atexit, in gunicorn's workers too. Registered
                # here, in the worker that counts: a finalizer inherited through a fork is
                # ignored in the child.
                self._finalizer = Finalize(self, self.flush, exitpriority=10)

    def _flush_on_timer(self) -> bool:
        """Write; done unless something is left (not written: the timer tries again)."""
        self.flush()
        with self._lock:
            return not self._counts

    def flush(self) -> None:
        """Write what is counted; if that fails, keep it for the next time."""
        with self._lock:
            counts, self._counts = self._counts, {}
        if not counts:
            return
        try:
            with background.own_connection():  # the timer's thread, or a worker's way out
                write(counts)
        except PeeweeException as error:
            log.warning("could not write %d tallies, kept for the next try: %s",
                        len(counts), type(error).__name__)
            with self._lock:
                for key, count in counts.items():
                    self._counts[key] = self._counts.get(key, 0) + count


def add(site_id: int, reason: str, count: int = 1, day: date | None = None) -> None:
    """Count `count` of `reason` for today (or `day`)."""
    if count <= 0:
        return
    metrics.count_not_stored(reason, count)
    current_app.extensions["egis_tally"].add((site_id, day or utcnow().date(), reason), count)


def add_quietly(site_id: int, reason: str, count: int = 1) -> None:
    """Tally from an error path: a failure to count must not change the error being answered."""
    try:
        add(site_id, reason, count)
    except PeeweeException as error:
        log.warning("could not tally %s: %s", reason, type(error).__name__)


def init_app(app: Flask) -> None:
    app.extensions["egis_tally"] = TallyBuffer(float(app.config["TALLY_FLUSH_SECONDS"]))
