"""Ingest health: per day, what was stored, and what was not and why."""
from typing import Any

from peewee import (
    Select,
    Value,
    fn,
)

from app.analytics.events import fetch
from app.analytics.numbers import day_of
from app.analytics.period import Period
from models import CrawlHit, Event, IngestTally, ServerEvent, database
from models.ingest_tally import (
    BOT,
    DUPLICATE,
    DUPLICATE_IDEMPOTENCY_KEY,
    DUPLICATE_ORDER,
    SAMPLED,
)

INGEST_COUNTS = ("events_stored", "server_events_stored", "crawl_hits_stored", "sampled_away",
                 "duplicate_batches", "duplicate_orders", "duplicate_idempotency_keys",
                 "bot_filtered", "rejected_total")
# Each tally reason's column; the duplicates are /metrics' egis_duplicates_total{kind} (batch,
# order, idempotency_key), counted by the same call (app.runtime.tally.add).
_TALLY_COLUMNS = {SAMPLED: "sampled_away", DUPLICATE: "duplicate_batches",
                  DUPLICATE_ORDER: "duplicate_orders",
                  DUPLICATE_IDEMPOTENCY_KEY: "duplicate_idempotency_keys", BOT: "bot_filtered"}


def _stored_per_day(model: Any, column: str, site_id: int, period: Period) -> Select:
    day = database.truncate_date("day", model.received_at)
    return (model.select(Value(column).alias("column"), day.cast("TEXT").alias("day"),
                         fn.COUNT(model.id).alias("n"))
            .where((model.site_id == site_id) & period.covers(model.received_at))
            .group_by(day))


def ingest_health(site_id: int, period: Period) -> dict[str, Any]:
    """Per receive day: what was stored, and what was not and why (the ingest tallies)."""
    tallies = (IngestTally.select(IngestTally.reason, IngestTally.day.cast("TEXT"),
                                  fn.SUM(IngestTally.count))
               .where((IngestTally.site_id == site_id)
                      & IngestTally.day.between(period.first, period.last))
               .group_by(IngestTally.day, IngestTally.reason))
    found = fetch(_stored_per_day(Event, "events_stored", site_id, period)
                   + _stored_per_day(ServerEvent, "server_events_stored", site_id, period)
                   + _stored_per_day(CrawlHit, "crawl_hits_stored", site_id, period)
                   + tallies)
    days: dict[str, dict[str, Any]] = {}
    for row in found:
        entry = days.setdefault(day_of(row["day"]), {"date": day_of(row["day"]),
                                                   **dict.fromkeys(INGEST_COUNTS, 0),
                                                   "rejected": {}})
        column, count = row["column"], int(row["n"])
        column = _TALLY_COLUMNS.get(column, column)
        if column in INGEST_COUNTS:
            entry[column] += count
        else:  # a rejection reason
            entry["rejected"][column] = entry["rejected"].get(column, 0) + count
            entry["rejected_total"] += count
    listed = [days[day] for day in sorted(days)]
    totals: dict[str, Any] = {name: sum(entry[name] for entry in listed)
                              for name in INGEST_COUNTS}
    totals["rejected"] = {}
    for entry in listed:
        for reason, count in entry["rejected"].items():
            totals["rejected"][reason] = totals["rejected"].get(reason, 0) + count
    return {"days": listed, "totals": totals, "estimated": False}
