"""Retention and erasure: deleting what is older than the operator keeps, or one person's data.

Both run beside live ingest. Rows go in batches of at most `batch_rows`, each deleted in its own
short transaction: on SQLite a long write transaction would hold off every ingest request (one
writer at a time), and on PostgreSQL it would hold row versions back from vacuum. The rows to
delete are found by walking the primary key upwards (keyset), so each row is read once however
many batches it takes.
"""
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from peewee import SQL, Expression, Model

from app import event_slots, idempotency, partitions, rollups, visits
from app.partitions import month_start
from models import (
    Batch,
    CrawlHit,
    Event,
    EventSlot,
    IdempotencyKey,
    IngestTally,
    ServerEvent,
    Usage,
    Visit,
    VisitPage,
    database,
)
from models.site import utcnow
from models.visitor_salt import SALT_LIFETIME, VisitorSalt
from models.visitor_state import VisitorState

DELETE_BATCH_ROWS = 2000


def delete_where(model: type[Model], condition: Expression,
                 batch_rows: int = DELETE_BATCH_ROWS) -> int:
    """Delete `model`'s rows matching `condition`, `batch_rows` per transaction; how many went."""
    deleted, after = 0, None
    while True:
        query = model.select(model.id).where(condition).order_by(model.id).limit(batch_rows)
        if after is not None:
            query = query.where(model.id > after)
        ids = [row_id for (row_id,) in query.tuples()]
        if not ids:
            return deleted
        with database.atomic():
            # The condition again: it also lets PostgreSQL skip partitions it cannot match.
            deleted += model.delete().where(model.id.in_(ids), condition).execute()
        after = ids[-1]


@dataclass(frozen=True)
class PruneCutoffs:
    data_before: datetime  # a month's first instant: whole months go
    batch_ids_before: datetime
    salt_days_before: date  # storage-free salts and visits: gone SALT_LIFETIME after their day
    # Idempotency-Key headers are remembered for a fixed week (app.idempotency.KEY_DAYS).
    idempotency_keys_before: datetime | None = None

    @classmethod
    def at(cls, now: datetime, older_than_months: int, idempotency_days: int) -> "PruneCutoffs":
        return cls(data_before=month_start(now, -older_than_months),
                   batch_ids_before=now - timedelta(days=idempotency_days),
                   salt_days_before=(now - SALT_LIFETIME).date() + timedelta(days=1),
                   idempotency_keys_before=now - timedelta(days=idempotency.KEY_DAYS))


def prune(cutoffs: PruneCutoffs, batch_rows: int = DELETE_BATCH_ROWS) -> dict[str, int]:
    """Delete data from before `cutoffs.data_before`, batch ids from before
    `cutoffs.batch_ids_before` and Idempotency-Key headers from before
    `cutoffs.idempotency_keys_before`; rows deleted per table.

    Events of whole months go with their partition (PostgreSQL); the rest row by row.
    """
    before = cutoffs.data_before
    rollups.merge()  # the rollups of every event stored go with them
    dropped = sum(partitions.drop_months_before(before).values())
    with rollups.deleting_events():
        deleted = _delete_older(cutoffs, batch_rows)
    deleted[Event._meta.table_name] += dropped
    return deleted


def _delete_older(cutoffs: PruneCutoffs, batch_rows: int) -> dict[str, int]:
    before = cutoffs.data_before
    targets = [
        (Event, Event.occurred_at < before),
        (Visit, Visit.started_at < before),  # a visit goes with the month it began in
        (VisitPage, VisitPage.started_at < before),
        (EventSlot, EventSlot.slot < before),
        (ServerEvent, ServerEvent.occurred_at < before),
        (CrawlHit, CrawlHit.received_at < before),
        (IngestTally, IngestTally.day < before.date()),
        (Usage, Usage.period < before.strftime("%Y-%m")),
        (Batch, Batch.received_at < cutoffs.batch_ids_before),
        (VisitorSalt, VisitorSalt.day < cutoffs.salt_days_before),
        (VisitorState, VisitorState.day < cutoffs.salt_days_before),
    ]
    if cutoffs.idempotency_keys_before is not None:
        targets.append((IdempotencyKey,
                        IdempotencyKey.created_at < cutoffs.idempotency_keys_before))
    return {model._meta.table_name: delete_where(model, condition, batch_rows)
            for model, condition in targets}


def prune_now(older_than_months: int, idempotency_days: int,
              batch_rows: int = DELETE_BATCH_ROWS) -> tuple[PruneCutoffs, dict[str, int]]:
    cutoffs = PruneCutoffs.at(utcnow(), older_than_months, idempotency_days)
    return cutoffs, prune(cutoffs, batch_rows)


def anonymous_ids_of(site_id: int, user_id: str) -> list[str]:
    """The anonymous ids (browsers) a user id was seen with: the same person before identify()."""
    query = (Event.select(Event.anonymous_id).distinct()
             .where(Event.site_id == site_id, Event.user_id == user_id,
                    Event.anonymous_id.is_null(False)))
    return [anonymous_id for (anonymous_id,) in query.tuples()]


def erase_user(site_id: int, user_id: str,
               batch_rows: int = DELETE_BATCH_ROWS) -> tuple[list[str], dict[str, int]]:
    """Delete everything stored about an identified user of a site: their events and server
    events, and those of the anonymous ids they were seen with, and their visits (derived
    again from the events left). Returns those anonymous ids and the rows deleted per
    table."""
    browsers = anonymous_ids_of(site_id, user_id)
    events = Event.user_id == user_id
    server_events = ServerEvent.identified_user_id == user_id
    if browsers:
        events |= Event.anonymous_id.in_(browsers)
        server_events |= ServerEvent.anonymous_id.in_(browsers)
    return browsers, _erase(site_id, events, server_events, VisitorState.visitor.in_(browsers),
                            batch_rows)


def erase_anonymous(site_id: int, anonymous_id: str,
                    batch_rows: int = DELETE_BATCH_ROWS) -> dict[str, int]:
    """Delete the events and server events of one anonymous id (one browser, or a derived
    storage-free visitor) of a site, and its current visit's row; its visits (with their
    pages) and the quarter-hour counts of its events are derived again from the events
    left."""
    return _erase(site_id, Event.anonymous_id == anonymous_id,
                  ServerEvent.anonymous_id == anonymous_id,
                  VisitorState.visitor == anonymous_id, batch_rows)


def _erase(site_id: int, events: Expression, server_events: Expression,
           visitors: Expression, batch_rows: int) -> dict[str, int]:
    events = (Event.site_id == site_id) & events
    with rollups.merged() as through:  # the rollups hold the events up to `through`
        sessions = [session_id for (session_id,) in Event.select(Event.session_id).distinct()
                    .where(events & Event.session_id.is_null(False)).tuples()]
        slot = event_slots.slot_column(Event.occurred_at)
        slots = [event_slots.as_datetime(value) for (value,) in
                 Event.select(slot.alias("slot")).where(events).group_by(SQL('"slot"'))
                 .tuples()]
        deleted = {
            Event._meta.table_name: delete_where(Event, events, batch_rows),
            ServerEvent._meta.table_name: delete_where(
                ServerEvent, (ServerEvent.site_id == site_id) & server_events, batch_rows),
            VisitorState._meta.table_name: delete_where(
                VisitorState, (VisitorState.site_id == site_id) & visitors, batch_rows),
        }
        deleted[Visit._meta.table_name] = _erase_visits(site_id, sessions, through)
        # the erased events' quarter hours, counted again
        event_slots.rebuild(site_id, slots, through=through)
    return deleted


def _erase_visits(site_id: int, sessions: list[str], through: int) -> int:
    """Derive the visits of the erased events' sessions again from the events left up to
    `through` (a visit with none left has no row); how many visit rows went."""
    before = sum(Visit.select().where(
        Visit.site_id == site_id,
        Visit.session_id.in_(sessions[start:start + visits.REBUILD_SESSIONS])).count()
        for start in range(0, len(sessions), visits.REBUILD_SESSIONS))
    return before - visits.rebuild(site_id, sessions, through=through)
