"""Events per site, quarter hour of their time (UTC) and type (models.EventSlot), merged from the
events after ingest (app.rollups.merging) by UPSERT_SQL from the rows `derived` makes of the new
events. `rebuild` derives rows from stored events, replacing what was there: erasure, and rows
written outside the store path (tests, the benchmark's seeding) use it. Merges and rebuilds
write shard 0; rows from before the merges (app.tracking.quota's shards, one per writer
process) are summed with it.
"""
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from peewee import SQL, Select, fn

from app.rollups import upserts
from app.storage.dialect import current, wide
from models import Event, EventSlot, database

SLOT = timedelta(minutes=15)
COLUMNS = ("site_id", "slot", "type", "shard", "events", "weight", "top_weight")
UPSERT_SQL = upserts.upsert_sql("event_slot", COLUMNS, ("site_id", "slot", "type", "shard"), {
    "events": upserts.summed("event_slot", "events"),
    "weight": upserts.summed("event_slot", "weight"),
    "top_weight": upserts.extreme("event_slot", "top_weight", ">")})
REBUILD_SLOTS = 200  # slots per rebuild statement


def slot_of(moment: datetime) -> datetime:
    """The first instant of the quarter hour `moment` is in."""
    return moment.replace(minute=moment.minute - moment.minute % 15, second=0, microsecond=0)


def is_slot_start(moment: datetime) -> bool:
    return slot_of(moment) == moment


def slot_column(column: Any) -> Any:
    """SQL: the first instant of the quarter hour of a naive UTC timestamp `column`, as the
    `slot` column holds it (SQLite: its text)."""
    return current().quarter_hour(column)


def as_datetime(value: Any) -> datetime:
    """A slot_column value as a datetime (SQLite hands back its text)."""
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


def derived(scope: Any) -> Select:
    """Rows (COLUMNS) derived from the events of `scope` (a condition on Event), in shard 0."""
    return (Event.select(Event.site_id, slot_column(Event.occurred_at).alias("slot"),
                         Event.type, SQL("0"), fn.COUNT(SQL("*")), fn.SUM(wide(Event.weight)),
                         fn.MAX(Event.weight))
            .where(scope).group_by(Event.site_id, SQL('"slot"'), Event.type))


def rebuild(site_id: int | None = None, slots: Iterable[datetime] | None = None, *,
            through: int) -> None:
    """Derive the rows of a site (every site: None), or of some of its quarter hours, from the
    stored events up to the id `through` (the rollups' mark, app.rollups.mark), replacing what
    was there."""
    site = (EventSlot.site_id == site_id) if site_id is not None else SQL("1 = 1")
    events = Event.id <= through
    if site_id is not None:
        events &= Event.site_id == site_id
    with database.atomic():
        if slots is None:
            upserts.replace_rows(EventSlot, COLUMNS, site, derived(events), site_id is None)
            return
        wanted = sorted(set(slots))
        for start in range(0, len(wanted), REBUILD_SLOTS):
            chunk = wanted[start:start + REBUILD_SLOTS]
            scope = (events & (Event.occurred_at >= chunk[0])
                     & (Event.occurred_at < chunk[-1] + SLOT)
                     & slot_column(Event.occurred_at).in_(chunk))
            upserts.replace_rows(EventSlot, COLUMNS, site & EventSlot.slot.in_(chunk),
                                 derived(scope), False)
