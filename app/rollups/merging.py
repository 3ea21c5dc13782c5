"""The merge: the rows of the events stored since the last merge, added to the rollups (visits
with their pages, app.rollups.visits and visit_pages; quarter hours, event_slots) with each
table's merge rules (app.rollups.upserts), and the mark moved past them (app.rollups.mark).

Why after ingest: merged in the store statement, the three upserts were a fixed cost of every
request, which multiplied PostgreSQL's work for a 1-event batch; merged here, many batches
share one statement of each kind, and a batch's share is a fraction of that (measured:
bench/README.md, "Instructions per request on both sides").

How: `merge` derives the rows of the events after the mark (the same `derived` the rebuilds
use) and upserts them in transactions of at most MERGE_IDS ids that each move the mark, so each
step is all or nothing. One merge at a time: an advisory lock on PostgreSQL, the write lock on
SQLite. A merge that has nothing to do reads the mark and the id sequence only, and takes no
lock (on SQLite no write lock). A merge never waits past its deadline, neither for the inserts
in flight (app.rollups.mark) nor for the lock: it then leaves the mark where it is and says so,
and the next merge takes the events. Erasure and pruning run within `merged`: everything
merged first, the mark held still, and the rows they rebuild derived from the events up to the
mark, so that no event is counted twice; `rebuild` (rows written beside the store path)
derives every row from the events up to the last final id and moves the mark there in the same
transaction.
"""
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import Context
from functools import cache
from time import monotonic
from typing import Any

from peewee import SQL, Select

from app.rollups import event_slots, visit_pages, visit_paths, visits
from app.rollups.mark import drawn_id, inserts_ended, largest_id, mark, set_mark, whole_through
from app.storage.dialect import Dialect, current
from models import Event, database

MERGE_LOCK_ID = 0x6567_6973_6D67  # "egismg": one merge at a time on a PostgreSQL server
_AFTER, _THROUGH = -(2**62) - 1, -(2**62) - 2  # stand-ins for a merge's id range
# Event ids per merge transaction: a backlog (timers that failed for a while) is merged in
# steps, each well within the pool's statement_timeout (app.storage.db).
MERGE_IDS = 200_000
DEFAULT_WAIT_SECONDS = 2.0  # EGIS_ROLLUP_WAIT_SECONDS's default (app.config)


@cache
def _merge_statements(dialect: Dialect) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """The three upserts of the events in an id range (_AFTER, _THROUGH], rendered once per
    kind of database: rendering them was most of a small merge's CPU (cProfile). Rendered in an
    empty context: no read's bound on the events
    (app.rollups.mark.counting_merged) may enter them."""
    return Context().run(_render_merge_statements, dialect)


def _render_merge_statements(dialect: Dialect) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    scope = (Event.id > _AFTER) & (Event.id <= _THROUGH)
    statements = []
    for upsert, rows in ((visits.upsert_sql(dialect), visits.derived(scope)),
                         (visit_pages.UPSERT_SQL, visit_pages.derived(scope)),
                         (event_slots.UPSERT_SQL, event_slots.derived(scope))):
        # WHERE: SQLite reads an upsert's SELECT with a join ambiguously without one
        query = Select([rows.alias("rows")], [SQL("*")]).where(SQL("1 = 1"))
        sql, params = database.get_sql_context().sql(query).query()
        statements.append((upsert.format(rows=sql), tuple(params)))
    return tuple(statements)


def _add(after: int, through: int) -> None:
    """Merge the events whose ids are in (after, through] into the three tables, then the
    visits' path heads (visit_paths: Python's fold, after the upsert made their rows)."""
    for sql, params in _merge_statements(current()):
        database.execute_sql(sql, [after if value == _AFTER else through if value == _THROUGH
                                   else value for value in params])
    visit_paths.merge(after, through)


def _merge_through(through: int) -> int:
    """Merge the events up to `through` (final ids) not merged yet, the merge lock held; the
    mark after."""
    merged_through = mark()
    while merged_through < through:  # a long backlog in steps, each within a statement's limit
        step = min(through, merged_through + MERGE_IDS)
        if step < through:  # reads meanwhile see the step's mark: it splits no transaction
            whole = whole_through(step)
            step = whole if whole > merged_through else step  # none is a step long in egis
        with database.atomic():
            _add(merged_through, step)
            set_mark(step)
        merged_through = step
    return merged_through


def _final_id(deadline: float) -> int | None:
    """The largest id the mark may move to: every id up to it final, no transaction's events
    on both sides of it; None when inserts in flight outlasted `deadline`. The merge lock held
    (SQLite: its transaction)."""
    drawn = drawn_id()
    return whole_through(drawn) if inserts_ended(deadline) else None


@contextmanager
def _merge_lock(deadline: float | None) -> Iterator[bool]:
    """Hold the merge lock for the block (True), or yield False when another merge held it past
    `deadline` (a time.monotonic() instant, the present: not at all; None: as long as it
    takes). SQLite: the block is one IMMEDIATE transaction."""
    with current().tried(MERGE_LOCK_ID, deadline) as held:
        yield held


def merge(wait_seconds: float = DEFAULT_WAIT_SECONDS, give_way: bool = False) -> bool:
    """Merge every event committed so far and not merged yet. False when that took longer
    than `wait_seconds` to begin: inserts in flight, or another merge, held it up (the mark
    then stays, or moves by the other merge only). `give_way`: no wait for another merge (a
    worker's timer, which tries again later: the other merge may take its events)."""
    deadline = monotonic() + wait_seconds
    drawn = drawn_id()
    if drawn <= mark():
        return True  # nothing stored since: no lock
    if not inserts_ended(deadline):  # before the lock: a merge waiting holds up no other
        return False
    with _merge_lock(monotonic() if give_way else deadline) as held:
        if held:  # SQLite: the largest id, final within the write lock
            _merge_through(largest_id() if current().one_writer else whole_through(drawn))
        return held


@contextmanager
def merged(wait_seconds: float = DEFAULT_WAIT_SECONDS) -> Iterator[int]:
    """Everything final merged (inserts in flight waited for `wait_seconds` at most), and no
    other merge until the block ends: yields the mark, the events up to which a rebuild within
    the block must derive its rows."""
    with _merge_lock(None):
        final = _final_id(monotonic() + wait_seconds)
        through = _merge_through(final) if final is not None else mark()
        yield through
        # SQLite gives a new row the largest id left plus one: after the block deleted the
        # largest ids, new events would get ids the mark counts as merged.
        if current().one_writer and (largest := largest_id()) < through:
            set_mark(largest)


@contextmanager
def deleting_events() -> Iterator[None]:
    """Around deletions of events outside `merged` (prune's): on SQLite they, and bringing the
    mark back to the largest id left, are one transaction (see `merged`); PostgreSQL's ids come
    from a sequence, never used twice."""
    if not current().one_writer:
        yield
        return
    with merged():
        yield


def rebuild(wait_seconds: float = DEFAULT_WAIT_SECONDS) -> int:
    """Derive every rollup again from the stored events, for rows written beside the store
    path (tests, the benchmark's seeding): up to the last final id (the mark, when inserts in
    flight outlast `wait_seconds`), and the mark moves there in the same transaction. How many
    visit rows there are."""
    with _merge_lock(None):
        final = _final_id(monotonic() + wait_seconds)
        through = mark() if final is None else final
        with database.atomic():
            count = visits.rebuild(through=through)
            event_slots.rebuild(through=through)
            set_mark(through)
    return count
