"""Retention (`flask data prune`): deleting what is older than the operator keeps, beside live
ingest.

Rows go in batches of at most `batch_rows`, each deleted in its own short transaction: on SQLite
a long write transaction would hold off every ingest request (one writer at a time), and on
PostgreSQL it would hold row versions back from vacuum. On PostgreSQL whole months of events go
with their partition. A visit that crosses the cutoff (began before it, ended after it) stays
for the days kept: its row and its pages are derived again from its events left, within the
rollups' merge lock (app.rollups.merging.merged), in one transaction. The OAuth tables lose
what app.oauth.expiry says has expired (used or expired codes, ended grants with their tokens,
clients unused for 30 days), after the events, outside their lock.
"""
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from peewee import Expression, Model

from app.ingest import idempotency
from app.oauth import expiry
from app.retention.deletes import DELETE_BATCH_ROWS, delete_where
from app.rollups import visits
from app.rollups.merging import deleting_events, merge, merged
from app.storage import partitions
from app.storage.partitions import month_start
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


@dataclass(frozen=True)
class PruneCutoffs:
    data_before: datetime  # a month's first instant: whole months go
    batch_ids_before: datetime
    salt_days_before: date  # storage-free salts and visits: gone SALT_LIFETIME after their day
    # Idempotency-Key headers are remembered for a fixed week (app.ingest.idempotency.KEY_DAYS).
    idempotency_keys_before: datetime | None = None
    # The OAuth rows expired as of this moment go (app.oauth.expiry has the rules).
    oauth_as_of: datetime | None = None

    @classmethod
    def at(cls, now: datetime, older_than_months: int, idempotency_days: int) -> "PruneCutoffs":
        return cls(data_before=month_start(now, -older_than_months),
                   batch_ids_before=now - timedelta(days=idempotency_days),
                   salt_days_before=(now - SALT_LIFETIME).date() + timedelta(days=1),
                   idempotency_keys_before=now - timedelta(days=idempotency.KEY_DAYS),
                   oauth_as_of=now)


def prune(cutoffs: PruneCutoffs, batch_rows: int = DELETE_BATCH_ROWS) -> dict[str, int]:
    """Delete data from before `cutoffs.data_before`, batch ids from before
    `cutoffs.batch_ids_before` and Idempotency-Key headers from before
    `cutoffs.idempotency_keys_before`, and the OAuth rows expired as of `cutoffs.oauth_as_of`;
    rows deleted per table (a visit that crosses the cutoff, derived again, counts as none)."""
    merge()  # the rollups of every event stored go with them, on both databases alike
    dropped = sum(partitions.drop_months_before(cutoffs.data_before).values())
    with deleting_events():  # SQLite: one transaction, as the mark must come back with it
        deleted = _delete_older(cutoffs, batch_rows)
        _rebuild_crossing(cutoffs.data_before)
    deleted[Event._meta.table_name] += dropped
    if cutoffs.oauth_as_of is not None:  # after the events' lock: nothing to do with them
        deleted.update(_delete_all(expiry.expired(cutoffs.oauth_as_of), batch_rows))
    return deleted


def _delete_older(cutoffs: PruneCutoffs, batch_rows: int) -> dict[str, int]:
    before = cutoffs.data_before
    targets = [
        (Event, Event.occurred_at < before),
        (Visit, Visit.ended_at < before),  # those across the cutoff: _rebuild_crossing
        (VisitPage, VisitPage.ended_at < before),
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
    return _delete_all(targets, batch_rows)


def _delete_all(targets: list[tuple[type[Model], Expression]],
                batch_rows: int) -> dict[str, int]:
    return {model._meta.table_name: delete_where(model, condition, batch_rows)
            for model, condition in targets}


def _rebuild_crossing(before: datetime) -> None:
    """Derive the visits that began before `before` and end after it (and their pages) again,
    from their events left: the part of each visit in the days kept. After the events before it
    went: within the merge lock, so that the rows hold the events up to the mark."""
    with merged() as through, database.atomic():
        crossing = defaultdict(list)
        for site_id, session_id in (Visit.select(Visit.site_id, Visit.session_id)
                                    .where(Visit.started_at < before, Visit.ended_at >= before)
                                    .tuples()):
            crossing[site_id].append(session_id)
        for site_id, sessions in crossing.items():
            visits.rebuild(site_id, sessions, through=through)


def prune_now(older_than_months: int, idempotency_days: int,
              batch_rows: int = DELETE_BATCH_ROWS) -> tuple[PruneCutoffs, dict[str, int]]:
    cutoffs = PruneCutoffs.at(utcnow(), older_than_months, idempotency_days)
    return cutoffs, prune(cutoffs, batch_rows)
