"""Events per site, quarter hour of their time (UTC) and type (models.EventSlot), kept up to
date by the statement that stores each batch, into the writer's own shard (app.tracking.quota):
merged by UPSERT_SQL, on PostgreSQL from rows that app.tracking.store's statements make of the
events they have just stored (with `slot_column`), on SQLite from `summary`'s. `rebuild` derives
rows from stored events, into shard 0: the migration that adds the table, erasure, and rows
written outside the store path (tests, the benchmark's seeding) use it.
"""
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from peewee import SQL, Select, fn

from app import upserts
from app.db import is_postgres
from app.sql import wide
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
    if is_postgres():
        return fn.date_bin(SQL("interval '15 minutes'"), column,
                           SQL("timestamp '2000-01-01'"))
    minutes = (fn.strftime("%M", column).cast("INTEGER") / 15) * 15
    return fn.strftime("%Y-%m-%d %H:", column).concat(fn.printf("%02d", minutes)).concat(":00")


def as_datetime(value: Any) -> datetime:
    """A slot_column value as a datetime (SQLite hands back its text)."""
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


def summary(site_id: int, shard: int, weight: float,
            events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One batch's contribution (COLUMNS): a row per (quarter hour, type) of its events
    (SQLite's store path)."""
    rows: dict[tuple[datetime, str], dict[str, Any]] = {}
    for event in events:
        key = (slot_of(event["occurred_at"]), event["type"])
        row = rows.get(key)
        if row is None:
            rows[key] = {"site_id": site_id, "slot": key[0], "type": key[1], "shard": shard,
                         "events": 1, "weight": weight, "top_weight": weight}
        else:
            row["events"] += 1
            row["weight"] += weight
    return list(rows.values())


def add(rows: list[dict[str, Any]]) -> None:
    """Merge one batch's rows into the stored ones (inside the caller's transaction)."""
    upserts.add_rows(UPSERT_SQL, EventSlot, COLUMNS, rows)


def derived(scope: Any, events: Any = Event, shard: Any = None) -> Select:
    """Rows (COLUMNS) derived from the events of `scope` (a condition on `events`: the event
    table, or the events a store statement has just inserted, app.tracking.store), into
    `shard` (an SQL expression, grouped by; None: shard 0)."""
    slot = slot_column(events.occurred_at)
    keys = [events.site_id, SQL('"slot"'), events.type]
    return (events.select(events.site_id, slot.alias("slot"), events.type,
                          SQL("0") if shard is None else shard, fn.COUNT(SQL("*")),
                          fn.SUM(wide(events.weight)), fn.MAX(events.weight))
            .where(scope).group_by(*keys, *([] if shard is None else [shard])))


def rebuild(site_id: int | None = None, slots: Iterable[datetime] | None = None) -> None:
    """Derive the rows of a site (every site: None), or of some of its quarter hours, from the
    stored events, replacing what was there."""
    site = (EventSlot.site_id == site_id) if site_id is not None else SQL("1 = 1")
    events = (Event.site_id == site_id) if site_id is not None else SQL("1 = 1")
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
