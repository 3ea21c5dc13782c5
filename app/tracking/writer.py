"""Group commit: the batches that concurrent requests of one worker bring are stored together.

A durable commit costs PostgreSQL about as much as inserting a small batch (bench/README.md);
with one commit per request, a 1-event batch pays it in full. Here the threads of a worker
queue their batches; whichever thread finds no commit in progress becomes the leader, takes
every queued batch and stores them with one statement (store.store_group) on its own
connection, then hands each request its own outcome and wakes the others. A batch queued while
a commit runs goes into the next one, so a group grows with the load and a lone request waits
for nobody. Every request answers only after the commit that carried its batch: a failed commit
raises its error in exactly those requests (503 through app.web.errors), and no others.

There is no writer thread: the leader is one of the waiting request threads, so nothing has to
be started after gunicorn forks, and a worker without traffic has nothing running.
"""
import threading
from collections.abc import Callable

from app.storage import deadline
from app.tracking.store import BatchRows, Outcome

StoreGroup = Callable[[list[BatchRows]], list[Outcome]]

# Larger batches store alone: their cost is in the rows, not the commit, so a group statement
# carrying them stores fewer events a second than their own statements would, and delays the
# small batches waiting on it (measured: bench/README.md, "Ingest throughput").
MAX_GROUPED_EVENTS = 10


class _Pending:
    __slots__ = ("done", "result", "rows")

    def __init__(self, rows: BatchRows) -> None:
        self.rows = rows
        self.done = False
        self.result: Outcome | BaseException | None = None  # set with done


class GroupWriter:
    """Stores batches of concurrent callers in shared commits; one per worker process."""

    def __init__(self, store_group: StoreGroup) -> None:
        self._store_group = store_group
        self._changed = threading.Condition()
        self._queue: list[_Pending] = []
        self._committing = False

    def store(self, rows: BatchRows) -> Outcome:
        """Store one batch, unless its batch id was already stored (store.store's outcome)."""
        pending = _Pending(rows)
        with self._changed:
            self._queue.append(pending)
            while self._committing and not pending.done:
                self._wait_within_deadline(pending)
            if not pending.done:
                group, self._queue, self._committing = self._queue, [], True
        if not pending.done:
            self._commit(group)
        if isinstance(pending.result, BaseException):
            raise pending.result
        return pending.result

    def _wait_within_deadline(self, pending: _Pending) -> None:
        """Wait for the commit in progress, at most until the request's deadline
        (EGIS_REQUEST_DEADLINE_SECONDS): a commit stuck on the database must not hold the
        requests queued behind it longer than their own. Past it the request answers 503; its
        batch, if a commit took it already, may still be stored, and a resend is a duplicate."""
        left = deadline.seconds_left()
        if left is None:
            self._changed.wait()
            return
        if left <= 0 or not self._changed.wait(left):
            if pending.done:
                return
            if pending in self._queue:  # no commit took it: it is never stored
                self._queue.remove(pending)
            raise deadline.DeadlinePassedError(deadline.MESSAGE_DEADLINE)

    def _commit(self, group: list[_Pending]) -> None:
        results: list[Outcome | BaseException]
        try:
            results = list(self._store_group([pending.rows for pending in group]))
        except BaseException as error:  # even an interrupt: the waiting requests must wake
            results = [error] * len(group)
        with self._changed:
            for pending, result in zip(group, results, strict=True):
                pending.result, pending.done = result, True
            self._committing = False
            self._changed.notify_all()
