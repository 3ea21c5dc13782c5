"""The rollups the agent's reads use (app.visits with app.visit_pages, app.event_slots), merged
from the event table after ingest instead of by each batch's own statement.

Why: merged in the store statement, the three upserts were a fixed cost of every request:
PostgreSQL executed 2.6 times the instructions of the tree before them (75ace7a) for a 1-event
batch; merged here, many batches share one statement of each kind, and a batch's share is
1.38 times (bench/README.md, "Instructions per request on both sides").

How: models.RollupMark holds the largest event id merged: every event up to it is in the
rollups, none after it. `merge` derives the rows of the events after the mark (the same
`derived` the rebuilds use) and adds them to the stored ones with the merge rules of each
table (app.upserts), in transactions of at most MERGE_IDS ids that each move the mark, so
each step is all or nothing. Which ids are final: PostgreSQL draws ids from a sequence as a
statement runs and commits them in any order, so a visible id does not prove that the smaller
ones have committed; a merge reads the sequence, then waits for the transactions that were
inserting events then (pg_locks: an insert holds ROW EXCLUSIVE on the table from before it
draws an id), after which every id the sequence had handed out is final (the mark may pass
ids of rolled back inserts: no event has them). Nothing is locked: ingest never waits for a
merge. A read with nothing new to merge
reads the sequence only, none of the event table's partitions. SQLite has one writer: the
merge's IMMEDIATE transaction sees every committed id and no other.

When: a worker that stored events merges EGIS_ROLLUP_MERGE_SECONDS later (MergeTimer, like
app.tally's buffer; 0: in the request), and every read of the agent surface merges first
(`merge`), so an answer counts every event stored before it was asked. One merge at a time:
an advisory lock on PostgreSQL, the write lock on SQLite. Erasure runs within `merged`:
everything merged first, the mark held still, and the erased sessions' rows derived again from
the events up to the mark, so that no event is counted twice; `rebuild` (rows written beside
the store path) derives every row from the events up to the last final id and moves the mark
there in the same transaction.
"""
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from flask import Flask, current_app
from peewee import SQL, PeeweeException, Select, fn

from app import background, event_slots, visit_pages, visits
from app.db import is_postgres
from models import Event, RollupMark, database

log = logging.getLogger(__name__)

MERGE_LOCK_ID = 0x6567_6973_6D67  # "egismg": one merge at a time on a PostgreSQL server
_AFTER, _THROUGH = -(2**62) - 1, -(2**62) - 2  # stand-ins for a merge's id range
# Event ids per merge transaction: a backlog (timers that failed for a while) is merged in
# steps, each well within the pool's statement_timeout (app.db).
MERGE_IDS = 200_000
INSERT_POLL_SECONDS = 0.002  # a store statement takes a millisecond or two


def _largest_id() -> int:
    return Event.select(fn.COALESCE(fn.MAX(Event.id), 0)).scalar()


def mark() -> int:
    """The largest event id merged (0: none)."""
    return RollupMark.select(RollupMark.merged_through).where(RollupMark.id == 1).scalar() or 0


def _set_mark(through: int) -> None:
    (RollupMark.insert(id=1, merged_through=through)
     .on_conflict(conflict_target=[RollupMark.id],
                  update={RollupMark.merged_through: through})
     .execute())


def _drawn_id() -> int:
    """The largest event id handed out: on PostgreSQL the sequence's (ids of rolled back
    inserts too), read without touching the event table's partitions; SQLite's largest rowid."""
    if not is_postgres():
        return _largest_id()
    return database.execute_sql(
        "SELECT COALESCE(pg_sequence_last_value(pg_get_serial_sequence('event', 'id')"
        "::regclass), 0)").fetchone()[0]


def _wait_for_inserts_in_flight() -> None:
    """PostgreSQL: every id the sequence has handed out so far is final once this returns."""
    # Each insert that drew an id so far has held ROW EXCLUSIVE on the event table since before
    # it drew it, until it ends: wait for those transactions, not for later ones (their ids are
    # larger). LOCK TABLE ... IN SHARE MODE would wait for them too, but a request queued
    # behind a VACUUM of the table would hold every insert back meanwhile.
    inserting = _inserting()
    while inserting:
        time.sleep(INSERT_POLL_SECONDS)
        inserting &= _inserting()


def _final(drawn: int) -> int:
    """`drawn` (_drawn_id's), once every id up to it is final: committed, or never to be (on
    SQLite at once, within the merge's IMMEDIATE transaction)."""
    if is_postgres():
        _wait_for_inserts_in_flight()
    return drawn


def _inserting() -> set[str]:
    """The other transactions that hold ROW EXCLUSIVE on the event table now."""
    return {vxid for (vxid,) in database.execute_sql(
        "SELECT virtualtransaction FROM pg_locks WHERE locktype = 'relation' "
        "AND relation = 'event'::regclass AND mode = 'RowExclusiveLock' AND granted "
        "AND pid <> pg_backend_pid()").fetchall()}


@cache
def _merge_statements(postgres: bool) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """The three upserts of the events in an id range (_AFTER, _THROUGH], rendered once per
    kind of database: rendering them took Peewee 13 ms of a merge's 16 ms of CPU (cProfile,
    PostgreSQL, five new events)."""
    scope = (Event.id > _AFTER) & (Event.id <= _THROUGH)
    statements = []
    for upsert, rows in ((visits.upsert_sql(postgres), visits.derived(scope)),
                         (visit_pages.UPSERT_SQL, visit_pages.derived(scope)),
                         (event_slots.UPSERT_SQL, event_slots.derived(scope))):
        # WHERE: SQLite reads an upsert's SELECT with a join ambiguously without one
        query = Select([rows.alias("rows")], [SQL("*")]).where(SQL("1 = 1"))
        sql, params = database.get_sql_context().sql(query).query()
        statements.append((upsert.format(rows=sql), tuple(params)))
    return tuple(statements)


def _add(after: int, through: int) -> None:
    """Merge the events whose ids are in (after, through] into the three tables."""
    for sql, params in _merge_statements(is_postgres()):
        database.execute_sql(sql, [after if value == _AFTER else through if value == _THROUGH
                                   else value for value in params])


def _merge_locked() -> int:
    """Merge what is final and not merged yet (the merge lock held); the mark after."""
    merged_through = mark()
    drawn = _drawn_id()
    if drawn <= merged_through:
        return merged_through  # nothing stored since
    through = _final(drawn)
    while merged_through < through:  # a long backlog in steps, each within a statement's limit
        step = min(through, merged_through + MERGE_IDS)
        with database.atomic():
            _add(merged_through, step)
            _set_mark(step)
        merged_through = step
    return merged_through


@contextmanager
def _merge_lock(wait: bool) -> Iterator[bool]:
    """Hold the merge lock for the block (True), or, with `wait` False, yield False when another
    merge holds it. SQLite: the block is one IMMEDIATE transaction."""
    if not is_postgres():
        with database.atomic(lock_type="IMMEDIATE"):
            yield True
        return
    if wait:
        database.execute_sql("SELECT pg_advisory_lock(%s)", (MERGE_LOCK_ID,))
    elif not database.execute_sql("SELECT pg_try_advisory_lock(%s)",
                                  (MERGE_LOCK_ID,)).fetchone()[0]:
        yield False
        return
    try:
        yield True
    finally:
        database.execute_sql("SELECT pg_advisory_unlock(%s)", (MERGE_LOCK_ID,))


def merge(wait: bool = True) -> bool:
    """Merge every event committed so far and not merged yet; False when `wait` is False and
    another merge was running (which then merges them, or the next one does)."""
    with _merge_lock(wait) as held:
        if held:
            _merge_locked()
        return held


@contextmanager
def merged() -> Iterator[int]:
    """Every committed event merged, and no other merge until the block ends: yields the mark,
    the events up to which a rebuild within the block must derive its rows."""
    with _merge_lock(wait=True):
        through = _merge_locked()
        yield through
        # SQLite gives a new row the largest id left plus one: after the block deleted the
        # largest ids, new events would get ids the mark counts as merged.
        if not is_postgres() and (largest := _largest_id()) < through:
            _set_mark(largest)


@contextmanager
def deleting_events() -> Iterator[None]:
    """Around deletions of events outside `merged` (prune): on SQLite they, and bringing the
    mark back to the largest id left, are one transaction (see `merged`); PostgreSQL's ids come
    from a sequence, never used twice."""
    if is_postgres():
        yield
        return
    with merged():
        yield


class MergeTimer:
    """Merges `interval` seconds after a worker stored events; one per process. No thread runs
    while nothing is stored. Unlike app.tally's counts nothing is lost when a worker stops
    before its timer: the events are stored, and the next merge or read takes them."""

    def __init__(self, interval: float) -> None:
        self._interval = interval
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def stored(self) -> None:
        """Events were stored: merge now (interval 0) or within the interval."""
        if self._interval <= 0:
            merge()
            return
        with self._lock:
            if self._timer is None:
                self._timer = background.later(self._interval, self._merge_on_timer)

    def _merge_on_timer(self) -> None:
        with self._lock:
            self._timer = None
        if not self._merge_quietly():
            self.stored()  # another process was merging, or the database failed: try again

    def _merge_quietly(self) -> bool:
        try:
            with background.own_connection():
                return merge(wait=False)
        except PeeweeException as error:
            log.warning("could not merge the rollups, trying again: %s", type(error).__name__)
            return False


def stored() -> None:
    """Tell this worker's timer that a request stored events."""
    current_app.extensions["egis_rollups"].stored()


def rebuild() -> int:
    """Derive every rollup again from the stored events, for rows written beside the store
    path (tests, the benchmark's seeding): the mark moves to the last of them in the same
    transaction. How many visit rows there are."""
    with _merge_lock(wait=True):
        through = _final(_drawn_id())
        with database.atomic():
            count = visits.rebuild(through=through)
            event_slots.rebuild(through=through)
            _set_mark(through)
    return count


def init_app(app: Flask) -> None:
    app.extensions["egis_rollups"] = MergeTimer(float(app.config["ROLLUP_MERGE_SECONDS"]))
