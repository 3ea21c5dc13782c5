"""Counting what was not stored, per site, UTC day and reason (models.ingest_tally)."""
import logging
from datetime import date

from peewee import PeeweeException

from app import metrics
from models import IngestTally
from models.site import utcnow

log = logging.getLogger(__name__)


def add(site_id: int, reason: str, count: int = 1, day: date | None = None) -> None:
    """Add `count` to today's tally: one upsert, never a read-modify-write."""
    if count <= 0:
        return
    metrics.count_not_stored(reason, count)
    (IngestTally
     .insert(site_id=site_id, day=day or utcnow().date(), reason=reason, count=count)
     .on_conflict(conflict_target=[IngestTally.site_id, IngestTally.day, IngestTally.reason],
                  update={IngestTally.count: IngestTally.count + count})
     .execute())


def add_quietly(site_id: int, reason: str, count: int = 1) -> None:
    """Tally from an error path: a failure to count must not change the error being answered."""
    try:
        add(site_id, reason, count)
    except PeeweeException as error:
        log.warning("could not tally %s: %s", reason, type(error).__name__)
