"""The mark (models.RollupMark): the largest event id merged. Every event up to it is in the
rollups, none after it. And which ids are final, so that the mark may move past them.

PostgreSQL draws ids from a sequence as a statement runs and commits them in any order, so a
visible id does not prove that the smaller ones have committed. An insert holds ROW EXCLUSIVE
on the event table from before it draws an id until its transaction ends (pg_locks shows it):
once the transactions that held it when the sequence was read have ended, every id the
sequence had handed out is final (committed, or rolled back: no event has it). Waiting for
them locks nothing, so ingest never waits for a merge; `LOCK TABLE event IN SHARE MODE` would
wait for them too, but a request queued behind a VACUUM of the table would hold every insert
back meanwhile. The wait has a deadline: a session left idle in a transaction that inserted
(an operator's psql, a stuck worker) would otherwise hold it forever; past the deadline the
mark stays where it is and reads answer from what is merged. SQLite has one writer: within the
merge's IMMEDIATE transaction every committed id is final and no other exists.

Final is not enough: the mark must not split a transaction either, or an answer would count a
request's first page view and not its second (a visit of one page, a bounce, until the next
merge). One statement draws its ids one row at a time, so the sequence read while a batch's
insert runs may fall between two of its ids. Once that insert has ended, `whole_through` finds
its later ids by the rows' xmin (the inserting transaction: egis stores a request in one
transaction without savepoints on PostgreSQL) and keeps the mark below its first one.
"""
from collections.abc import Iterator
from contextlib import contextmanager
from time import monotonic, sleep

from peewee import fn

from app.storage.dialect import current
from models import Event, RollupMark
from models.event import readable_through

FIRST_POLL_SECONDS = 0.002  # a store statement takes a millisecond or two
LAST_POLL_SECONDS = 0.05  # a transaction that lasts longer is polled more calmly


def mark() -> int:
    """The largest event id merged (0: none)."""
    return RollupMark.select(RollupMark.merged_through).where(RollupMark.id == 1).scalar() or 0


@contextmanager
def counting_merged() -> Iterator[int]:
    """Within a read's transaction (one snapshot): every statement of the block reads the events
    up to the mark in that snapshot, those its rollups hold, and no later one (models.Event's
    `select`); yields the mark. So all figures of one answer count the same events, though
    ingest commits new ones meanwhile. A read of the same snapshot in another thread (its
    context copied from the first: app.analytics.reading's `concurrently`) keeps the mark it was
    handed rather than read it again: a lock request on the mark's table queued between the
    two reads would otherwise wait for the first, which waits for the second."""
    through = readable_through.get()
    if through is None:
        through = mark()
    token = readable_through.set(through)
    try:
        yield through
    finally:
        readable_through.reset(token)


def set_mark(through: int) -> None:
    (RollupMark.insert(id=1, merged_through=through)
     .on_conflict(conflict_target=[RollupMark.id],
                  update={RollupMark.merged_through: through})
     .execute())


def largest_id() -> int:
    return Event.select(fn.COALESCE(fn.MAX(Event.id), 0)).scalar()


def drawn_id() -> int:
    """The largest event id handed out: on PostgreSQL the sequence's (ids of rolled back
    inserts too), read without touching the event table's partitions; SQLite's largest rowid."""
    dialect = current()
    return largest_id() if dialect.one_writer else dialect.last_drawn_event_id()


def inserts_ended(deadline: float) -> bool:
    """Whether the transactions inserting events now (PostgreSQL) ended before `deadline` (a
    time.monotonic() instant): then every id drawn_id() read before this call is final.
    Later transactions are not waited for: their ids are larger. SQLite: True."""
    dialect = current()
    if dialect.one_writer:
        return True
    inserting = dialect.inserting_event_transactions()
    pause = FIRST_POLL_SECONDS
    while inserting:
        left = deadline - monotonic()
        if left <= 0:
            return False
        sleep(min(pause, left))
        pause = min(pause * 2, LAST_POLL_SECONDS)
        inserting &= dialect.inserting_event_transactions()
    return True


def whole_through(final: int) -> int:
    """The largest id up to `final` (every id up to it final) below which no transaction's
    events continue after it: the mark there counts each transaction's events all or none. At
    least the mark. PostgreSQL only (SQLite: `final`, its one writer's transactions have ended).

    Usually one statement that finds nothing: a transaction crossing `final` (in flight when the
    sequence was read) lowers it to below its first id, where another may cross in turn."""
    dialect = current()
    if dialect.one_writer:
        return final
    merged_through = mark()
    through = final
    while through > merged_through:
        first = dialect.first_event_id_crossing(merged_through, through)
        if first is None:
            return through
        through = first - 1
    return merged_through
