"""Writing accepted events: one transaction, and on PostgreSQL one statement, per request.

On PostgreSQL a batch is stored by a single data-modifying CTE: the batch row is inserted with
ON CONFLICT DO NOTHING, and the events and the usage shard are inserted *from* its RETURNING
row, so a duplicate batch inserts nothing at all, atomically, even when two copies race. The
events travel as one JSON array parameter unpacked by jsonb_to_recordset: one round trip, no
query per event, and almost no Python work per event. Peewee's query builder has no way to
spell a column definition list (`AS e(type text, ...)`), hence the hand-written statement,
kept to this module. SQLite (the zero-setup default) gets the same effect with Peewee queries
in one transaction.
"""
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from peewee import IntegrityError

from app.db import is_postgres
from models import Batch, Event, Usage, database

# Per-event columns; the batch-wide ones come from BatchRows.
EVENT_COLUMNS = ("type", "name", "page_url", "page_title", "referrer", "properties",
                 "client_ts", "occurred_at")

_PG_STORE_BATCH = """
WITH new_batch AS (
    INSERT INTO batch (site_id, batch_key, event_count, received_at)
    VALUES (%(site_id)s, %(batch_key)s, %(count)s, %(received_at)s)
    ON CONFLICT (site_id, batch_key) DO NOTHING
    RETURNING id
), stored AS (
    INSERT INTO event (site_id, batch_id, session_id, anonymous_id, user_id, type, name,
                       page_url, page_title, referrer, properties, client_ts, sent_ts,
                       occurred_at, received_at, weight)
    SELECT %(site_id)s, new_batch.id, %(session_id)s, %(anonymous_id)s, %(user_id)s, e.type,
           e.name, e.page_url, e.page_title, e.referrer, e.properties, e.client_ts,
           %(sent_ts)s, e.occurred_at, %(received_at)s, %(weight)s
    FROM new_batch, jsonb_to_recordset(%(events)s::jsonb) AS e(
        type text, name text, page_url text, page_title text, referrer text,
        properties jsonb, client_ts bigint, occurred_at timestamp)
), counted AS (
    INSERT INTO usage (site_id, period, shard, events)
    SELECT %(site_id)s, %(period)s, %(shard)s, %(count)s FROM new_batch WHERE %(count)s > 0
    ON CONFLICT (site_id, period, shard) DO UPDATE SET events = usage.events + EXCLUDED.events
)
SELECT count(*) FROM new_batch
"""


@dataclass(frozen=True)
class BatchRows:
    """What one request stores: batch-wide fields plus one dict per event (EVENT_COLUMNS)."""

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


def store(rows: BatchRows) -> bool:
    """Store the events (and the batch id); False when the batch id was already stored."""
    if is_postgres() and rows.batch_key is not None:
        return _store_postgres(rows)
    return _store_portable(rows)


def _store_postgres(rows: BatchRows) -> bool:
    params = {
        "site_id": rows.site_id, "batch_key": rows.batch_key, "count": len(rows.events),
        "received_at": rows.received_at, "session_id": rows.session_id,
        "anonymous_id": rows.anonymous_id, "user_id": rows.user_id, "sent_ts": rows.sent_ts,
        "weight": rows.weight, "events": orjson.dumps(rows.events).decode(),
        "period": rows.period, "shard": rows.shard,
    }
    (inserted,) = database.execute_sql(_PG_STORE_BATCH, params).fetchone()
    return inserted == 1


def _store_portable(rows: BatchRows) -> bool:
    shared = {"site_id": rows.site_id, "session_id": rows.session_id,
              "anonymous_id": rows.anonymous_id, "user_id": rows.user_id,
              "sent_ts": rows.sent_ts, "received_at": rows.received_at, "weight": rows.weight}
    with database.atomic():
        batch_id = None
        if rows.batch_key is not None:
            try:
                with database.atomic():
                    batch_id = Batch.insert(site_id=rows.site_id, batch_key=rows.batch_key,
                                            event_count=len(rows.events),
                                            received_at=rows.received_at).execute()
            except IntegrityError:
                return False
        if rows.events:
            Event.insert_many([{**shared, "batch_id": batch_id, **event}
                               for event in rows.events]).execute()
            add_usage(rows.site_id, rows.period, rows.shard, len(rows.events))
    return True


def add_usage(site_id: int, period: str, shard: int, count: int) -> None:
    (Usage.insert(site_id=site_id, period=period, shard=shard, events=count)
     .on_conflict(conflict_target=[Usage.site_id, Usage.period, Usage.shard],
                  update={Usage.events: Usage.events + count})
     .execute())


def first_count(site_id: int, batch_key: str) -> int:
    """How many events the stored copy of a duplicate batch had."""
    batch = Batch.get_or_none(Batch.site_id == site_id, Batch.batch_key == batch_key)
    return batch.event_count if batch is not None else 0
