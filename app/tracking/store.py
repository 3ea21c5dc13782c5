"""Writing accepted events: one transaction, and on PostgreSQL one statement, per request.

On PostgreSQL a batch is stored by a single data-modifying CTE: the batch row is inserted with
ON CONFLICT DO NOTHING, and the events and the usage shard are inserted *from* its RETURNING
row, so a duplicate batch inserts nothing at all, atomically, even when two copies race; for a
duplicate the same statement reads the stored copy's event count, which the answer repeats. The
events travel as one JSON array parameter unpacked by jsonb_to_recordset: one round trip, no
query per event, and almost no Python work per event; the statement is prepared once per
connection (app.storage.db.PreparedStatement). Peewee's query builder has no way to
spell a column definition list (`AS e(type text, ...)`), hence statements written here, kept
to this module, their column lists rendered from one table of the event's columns
(EVENT_TABLE). SQLite (the zero-setup default) gets the same effect with Peewee queries
in one transaction. The request's visit context (app.context.request: country, device, ...) is
the same for every event of a request, so it travels as statement parameters (a group's, as
fields of each batch), not once per event. The rollups (visits, their pages, quarter hours)
are not written here: app.rollups merges the stored events into them later, in bulk, which
costs PostgreSQL far less than three upserts in every request's statement.
"""
from collections.abc import Iterable
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

import orjson
from peewee import IntegrityError

from app.context.request import NO_CONTEXT, RequestContext
from app.storage.db import PreparedStatement
from app.storage.dialect import current
from models import Batch, Event, Usage, database

# The event table's columns as a batch stores them, in the INSERT's order: an event's own (its
# PostgreSQL type: they travel in the JSON array of events) or the batch's (None: one value for
# every event of the batch, a statement parameter or a field of the group's row).
CONTEXT_COLUMNS = tuple(column.name for column in fields(RequestContext))
EVENT_TABLE: tuple[tuple[str, str | None], ...] = (
    ("site_id", None), ("batch_id", None), ("session_id", None), ("anonymous_id", None),
    ("user_id", None), ("type", "text"), ("name", "text"), ("page_url", "text"),
    ("page_title", "text"), ("referrer", "text"), ("properties", "jsonb"), ("client_ts", "bigint"),
    ("sent_ts", None), ("occurred_at", "timestamp"), ("received_at", None), ("weight", None),
    ("path", "text"), ("hostname", "text"), ("source", "text"), ("channel", "text"),
    ("referrer_url", "text"), ("utm_source", "text"), ("utm_medium", "text"),
    ("utm_campaign", "text"), ("utm_content", "text"), ("utm_term", "text"),
    *((name, None) for name in CONTEXT_COLUMNS), ("storage_free", None))
# What a batch brings besides its events' own columns, in $1, $2 ... order (the group's rows
# carry the same fields).
BATCH_FIELDS: tuple[tuple[str, str], ...] = (
    ("site_id", "integer"), ("batch_key", "text"), ("count", "integer"),
    ("received_at", "timestamp"), ("session_id", "text"), ("anonymous_id", "text"),
    ("user_id", "text"), ("sent_ts", "bigint"), ("weight", "real"), ("events", "jsonb"),
    ("period", "text"), ("shard", "smallint"), *((name, "text") for name in CONTEXT_COLUMNS),
    ("storage_free", "boolean"))
# The batch-wide columns of every event row (the batch's id aside, known only once stored).
SHARED_COLUMNS = tuple(name for name, own in EVENT_TABLE if own is None and name != "batch_id")


def _listed(items: Iterable[str], indent: int) -> str:
    """`items` comma-separated, as many to a line as fit in 92 characters, each continued line
    after `indent` spaces (the statements read as they were written by hand)."""
    lines: list[str] = []
    for item in items:
        if lines and indent + len(lines[-1]) + len(item) + 2 <= 92:
            lines[-1] += f" {item},"
        else:
            lines.append(f"{item},")
    return ("\n" + " " * indent).join(lines)[:-1]


def _event_insert(batch_value: dict[str, str], source: str, events: str) -> str:
    """The INSERT of a batch's events from `source`: each column from the JSON array `events`
    (alias e) or, for a batch-wide one, `batch_value`'s expression."""
    columns = _listed((name for name, _own in EVENT_TABLE), 23)
    values = _listed((f"e.{name}" if own else batch_value[name] for name, own in EVENT_TABLE), 11)
    record = _listed((f"{name} {own}" for name, own in EVENT_TABLE if own), 8)
    return (f"INSERT INTO event ({columns})\n"
            f"    SELECT {values}\n"
            f"    FROM {source}, jsonb_to_recordset({events}) AS e(\n"
            f"        {record})")


# The single-batch statement's parameter of each batch-wide column: $1 for site_id ...
_PARAMETER = {name: f"${number}" for number, (name, _type) in enumerate(BATCH_FIELDS, 1)}
_GROUP_INPUT = _listed((f"{name} {type_}" for name, type_ in (("position", "integer"),
                                                                *BATCH_FIELDS)), 8)

BATCH_STATEMENT = PreparedStatement(
    name="egis_store_batch",
    parameters=BATCH_FIELDS,
    body=f"""
WITH new_batch AS (
    INSERT INTO batch (site_id, batch_key, event_count, received_at)
    VALUES ($1, $2, $3, $4)
    ON CONFLICT (site_id, batch_key) DO NOTHING
    RETURNING id
), stored AS (
    {_event_insert({**_PARAMETER, "batch_id": "new_batch.id"}, "new_batch", "$10")}
), counted AS (
    INSERT INTO usage (site_id, period, shard, events)
    SELECT $1, $11, $12, $3 FROM new_batch WHERE $3 > 0
    ON CONFLICT (site_id, period, shard) DO UPDATE SET events = usage.events + EXCLUDED.events
)
SELECT EXISTS (SELECT FROM new_batch) AS stored,
       -- For a resend, the stored copy's count; looked up only when nothing was inserted.
       CASE WHEN NOT EXISTS (SELECT FROM new_batch) THEN
           (SELECT event_count FROM batch WHERE site_id = $1 AND batch_key = $2) END
""")


# Several requests' batches in one statement (app.tracking.writer): the same steps as above,
# over a JSON array of batches. Batch rows and usage rows are written in one order (site, key;
# site, period, shard) so that two workers' concurrent groups lock them in the same order and
# cannot deadlock; a shard row gets one upsert per group, with the group's sum.
GROUP_STATEMENT = PreparedStatement(
    name="egis_store_group",
    parameters=(("batches", "jsonb"),),
    body=f"""
WITH input AS (
    SELECT * FROM jsonb_to_recordset($1) AS b(
        {_GROUP_INPUT})
), new_batch AS (
    INSERT INTO batch (site_id, batch_key, event_count, received_at)
    SELECT site_id, batch_key, count, received_at FROM input ORDER BY site_id, batch_key
    ON CONFLICT (site_id, batch_key) DO NOTHING
    RETURNING id, site_id, batch_key
), kept AS (
    -- In the group's order, which the events' ids follow: the rollups break ties of time by
    -- the event id (app.rollups.visits).
    SELECT input.*, new_batch.id AS batch_id
    FROM input JOIN new_batch USING (site_id, batch_key) ORDER BY input.position
), stored AS (
    {_event_insert({name: f"k.{name}" for name, _own in EVENT_TABLE}, "kept AS k", "k.events")}
), counted AS (
    INSERT INTO usage (site_id, period, shard, events)
    SELECT site_id, period, shard, sum(count) FROM kept WHERE count > 0
    GROUP BY site_id, period, shard ORDER BY site_id, period, shard
    ON CONFLICT (site_id, period, shard) DO UPDATE SET events = usage.events + EXCLUDED.events
)
SELECT input.position, kept.batch_id IS NOT NULL AS stored,
       CASE WHEN kept.batch_id IS NULL THEN
           (SELECT event_count FROM batch
            WHERE batch.site_id = input.site_id AND batch.batch_key = input.batch_key) END
FROM input LEFT JOIN kept USING (position)
""")


@dataclass(frozen=True)
class BatchRows:
    """What one request stores: batch-wide fields (the visit context among them) plus one dict
    per event (of its own columns in EVENT_TABLE)."""

    site_id: int
    batch_key: str | None  # None: no idempotency record (a goal posted to /api/goals)
    session_id: str | None
    anonymous_id: str | None
    user_id: str | None
    sent_ts: int | None
    received_at: datetime
    weight: float
    events: list[dict[str, Any]]
    period: str
    shard: int
    context: RequestContext = NO_CONTEXT
    storage_free: bool = False  # its visitor id was derived (models.Event.storage_free)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of one batch: stored now, or a resend of a batch id already stored."""

    stored: bool
    count: int  # events stored now; for a resend, the events its stored copy had


def store(rows: BatchRows) -> Outcome:
    """Store the events (and the batch id), unless the batch id was already stored."""
    if current().prepares_statements and rows.batch_key is not None:
        return _store_postgres(rows)
    return _store_portable(rows)


def _present(row: dict[str, Any]) -> dict[str, Any]:
    """`row` without its null members: jsonb_to_recordset and jsonb_populate_record read a
    missing key as NULL, and PostgreSQL parses every key it is sent. Most of an event's
    columns are null (a page view has no name, a click no campaign), so leaving them out
    spares PostgreSQL more converting the JSON parameter than it costs Python (measured:
    bench/README.md, `python -m bench.ingest.store_nodes --group`)."""
    return {key: value for key, value in row.items() if value is not None}


def _events_json(rows: BatchRows) -> list[dict[str, Any]]:
    return [_present(event) for event in rows.events]


def _batch_values(rows: BatchRows, events: Any) -> dict[str, Any]:
    """The BATCH_FIELDS of `rows`, its events as `events`."""
    return {"site_id": rows.site_id, "batch_key": rows.batch_key, "count": len(rows.events),
            "received_at": rows.received_at, "session_id": rows.session_id,
            "anonymous_id": rows.anonymous_id, "user_id": rows.user_id, "sent_ts": rows.sent_ts,
            "weight": rows.weight, "events": events, "period": rows.period, "shard": rows.shard,
            **rows.context.columns(),
            # TRUE or NULL, never FALSE: the column's contract (migration 0020)
            "storage_free": True if rows.storage_free else None}


def _store_postgres(rows: BatchRows) -> Outcome:
    params = _batch_values(rows, orjson.dumps(_events_json(rows)).decode())
    (stored, stored_count) = BATCH_STATEMENT.execute(params).fetchone()
    return _outcome(rows, stored, stored_count)


def store_group(group: list[BatchRows]) -> list[Outcome]:
    """Store several batches (each with a batch id) in one PostgreSQL statement.

    The result says, batch by batch, whether it was stored; a batch id already stored, before
    or earlier in this group (the first copy in the group is the one stored), is not. A group
    of one takes the single-batch statement, so a lone request costs what it did before.
    """
    if len(group) == 1:
        return [_store_postgres(group[0])]
    firsts: dict[tuple[int, str | None], int] = {}
    for position, rows in enumerate(group):
        firsts.setdefault((rows.site_id, rows.batch_key), position)
    batches = [_group_row(position, group[position]) for position in firsts.values()]
    cursor = GROUP_STATEMENT.execute({"batches": orjson.dumps(batches).decode()})
    by_position = {position: _outcome(group[position], stored, stored_count)
                   for position, stored, stored_count in cursor.fetchall()}
    outcomes = []
    for position, rows in enumerate(group):
        first = by_position[firsts[(rows.site_id, rows.batch_key)]]
        outcomes.append(first if position in by_position else Outcome(False, first.count))
    return outcomes


def _outcome(rows: BatchRows, stored: bool, stored_count: int | None) -> Outcome:
    if stored:
        return Outcome(True, len(rows.events))
    if stored_count is None:
        # The stored copy was committed by a concurrent request while this statement ran: the
        # statement's snapshot, taken before, cannot see it; a new one can.
        stored_count = first_count(rows.site_id, rows.batch_key)
    return Outcome(False, stored_count)


def _group_row(position: int, rows: BatchRows) -> dict[str, Any]:
    return _present({"position": position, **_batch_values(rows, _events_json(rows))})


def _store_portable(rows: BatchRows) -> Outcome:
    values = _batch_values(rows, None)
    shared = {name: values[name] for name in SHARED_COLUMNS}
    with database.atomic():
        batch_id = None
        if rows.batch_key is not None:
            try:
                with database.atomic():
                    batch_id = Batch.insert(site_id=rows.site_id, batch_key=rows.batch_key,
                                            event_count=len(rows.events),
                                            received_at=rows.received_at).execute()
            except IntegrityError:
                return Outcome(False, first_count(rows.site_id, rows.batch_key))
        if rows.events:
            Event.insert_many([{**shared, "batch_id": batch_id, **event}
                               for event in rows.events]).execute()
            add_usage(rows.site_id, rows.period, rows.shard, len(rows.events))
    return Outcome(True, len(rows.events))


def add_usage(site_id: int, period: str, shard: int, count: int) -> None:
    (Usage.insert(site_id=site_id, period=period, shard=shard, events=count)
     .on_conflict(conflict_target=[Usage.site_id, Usage.period, Usage.shard],
                  update={Usage.events: Usage.events + count})
     .execute())


def first_count(site_id: int, batch_key: str | None) -> int:
    """How many events the stored copy of a duplicate batch had."""
    batch = Batch.get_or_none(Batch.site_id == site_id, Batch.batch_key == batch_key)
    return batch.event_count if batch is not None else 0
