"""Reads on a PostgreSQL streaming replica (EGIS_READ_DATABASE_URL, a hot standby of
DATABASE_URL): merges and every write stay on the primary; a tool call's read goes to the
replica once it has replayed past the call's merge, and to the primary otherwise.

Caught up: after the merge commits, the primary's WAL position (pg_current_wal_lsn()) is past
the merge's commit record, and every event up to the mark committed before it; once the
replica's replay position (pg_last_wal_replay_lsn()) reaches that position, the replica holds
them all, so an answer read there still counts every event stored before the call. The call
waits for that at most EGIS_READ_REPLICA_WAIT_SECONDS. A replica that lags longer ("lagging"),
cannot be reached or is no standby ("down"), or cancels the read for a recovery conflict
("conflict": replay had to remove row versions or take a lock the read held) -> the call reads
from the primary: one log line and egis_read_replica_fallbacks_total{reason}, never an error.
After "down" the replica is left alone for DOWN_RETRY_SECONDS, so that a host that does not
answer costs a connect timeout once per worker in that time, not once per call.
"""
import logging
from collections.abc import Callable, Iterator
from threading import Lock
from time import monotonic, sleep
from typing import TypeVar

from flask import current_app
from peewee import Database, InterfaceError, OperationalError

from app.runtime.metrics import READ_REPLICA_FALLBACKS, READ_REPLICA_READS
from app.storage.db import read_database
from models import database

log = logging.getLogger(__name__)
T = TypeVar("T")

OK, LAGGING, DOWN, CONFLICT = "ok", "lagging", "down", "conflict"
DOWN_RETRY_SECONDS = 5.0
FIRST_POLL_SECONDS, LAST_POLL_SECONDS = 0.001, 0.05
# SQLSTATEs of a read the replica gave up on: a recovery conflict (serialization_failure,
# database_dropped), the standby shutting down or starting (admin_shutdown, cannot_connect_now)
CONFLICTS = {"40001", "57P04"}
GONE = {"57P01", "57P03"}


class _Health:
    """When this worker last found the replica down (one per process)."""

    def __init__(self) -> None:
        self._lock = Lock()
        self._down_at: float | None = None

    def resting(self) -> bool:
        with self._lock:
            return self._down_at is not None and monotonic() - self._down_at < DOWN_RETRY_SECONDS

    def note(self, state: str) -> None:
        with self._lock:
            self._down_at = monotonic() if state == DOWN else None


_health = _Health()


def _wait_seconds() -> float:
    return float(current_app.config["READ_REPLICA_WAIT_SECONDS"])


def replay_state(replica: Database, wait_seconds: float) -> str:
    """OK once `replica` has replayed past the primary's WAL position as of now, LAGGING when
    it has not within `wait_seconds`, DOWN when it cannot be asked or is no standby."""
    position = _primary_position()
    try:
        with replica.connection_context():
            return _replayed(replica, position, wait_seconds)
    except (OperationalError, InterfaceError):
        return DOWN


def _primary_position() -> str:
    return database.execute_sql("SELECT pg_current_wal_lsn()").fetchone()[0]


def _replayed(replica: Database, position: str, wait_seconds: float) -> str:
    """OK, LAGGING or DOWN for the replica's connection open in this thread: the one the
    read that follows uses. Behind one address of several replicas (HAProxy's /replica), a
    check on one connection says nothing of a read on another."""
    deadline = monotonic() + wait_seconds
    pause = FIRST_POLL_SECONDS
    while True:
        replayed = replica.execute_sql("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn",
                                       (position,)).fetchone()[0]
        if replayed is None:  # not in recovery: a primary of its own, never caught up
            return DOWN
        if replayed:
            return OK
        left = deadline - monotonic()
        if left <= 0:
            return LAGGING
        sleep(min(pause, left))
        pause = min(pause * 2, LAST_POLL_SECONDS)


def state() -> str | None:
    """The replica's state for /readyz ("ok", "lagging", "down"), None without a replica."""
    replica = read_database()
    if replica is None:
        return None
    found = replay_state(replica, _wait_seconds())
    _health.note(found)
    return found


def _gave_up(error: BaseException) -> str | None:
    """CONFLICT or DOWN when `error` says the replica dropped the read, else None (an error of
    the read itself, which the primary would raise as well). The errors it was raised while
    handling count too: a standby that ends the session for a conflict makes the rollback of
    the read's transaction fail as well, with "connection already closed"."""
    codes = [getattr(getattr(one, "orig", None), "pgcode", None) or getattr(one, "pgcode", None)
             for one in _chain(error)]
    if CONFLICTS & set(codes):
        return CONFLICT
    if GONE & set(codes) or codes[0] is None:  # no SQLSTATE: the connection itself failed
        return DOWN
    return None


def configured() -> bool:
    return read_database() is not None


def read_without_primary(run: Callable[[], T]) -> T:
    """`run()` on the replica, unchecked: the primary cannot be reached to say how far it is
    (a failover's seconds); the caller's answer says it may miss the latest events."""
    replica = read_database()
    assert replica is not None
    with replica.connection_context(), database.reading_from(replica):
        found = run()
    READ_REPLICA_READS.inc()
    return found


def read(run: Callable[[], T]) -> T:
    """`run()` (a whole read: its transaction and statements) on the replica when there is one
    and it has caught up with the primary, else on the primary."""
    replica = read_database()
    if replica is None:
        return run()
    if _health.resting():  # found down lately: not asked again before DOWN_RETRY_SECONDS
        return _on_primary(run, DOWN, "")
    try:
        position = _primary_position()
    except (OperationalError, InterfaceError):
        return read_without_primary(run)  # the primary went away in the call; the replica may
    reason, detail = DOWN, ""
    checked = False
    try:
        with replica.connection_context():  # the check and the read: one connection
            reason = _replayed(replica, position, _wait_seconds())
            checked = True
            if reason == OK:
                with database.reading_from(replica):
                    found = run()
                _health.note(OK)
                READ_REPLICA_READS.inc()
                return found
    except (OperationalError, InterfaceError) as error:
        if checked:
            reason = _gave_up(error)
            if reason is None:
                raise
            if reason == DOWN and _answers(replica):
                # It ended the read's session and is up: a standby ends a session idle in its
                # transaction (between two statements) for a conflict, and the client learns
                # only that the connection closed.
                reason = CONFLICT
            detail = _first_line([*_chain(error)][-1])
        else:
            reason = DOWN
    _health.note(reason)
    return _on_primary(run, reason, detail)


def _chain(error: BaseException | None) -> Iterator[BaseException]:
    """The error and those it was raised while handling, the first one last."""
    while error is not None:
        yield error
        error = error.__cause__ or error.__context__


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _answers(replica: Database) -> bool:
    try:
        with replica.connection_context():
            replica.execute_sql("SELECT 1")
    except (OperationalError, InterfaceError):
        return False
    return True


def _on_primary(run: Callable[[], T], reason: str, detail: str) -> T:
    READ_REPLICA_FALLBACKS.labels(reason).inc()
    log.warning("read replica %s, reading from the primary%s", reason,
                f": {detail}" if detail else "")
    return run()
