"""The site's traffic of the last minutes, added before a read benchmark asks who is on it now.

A seeded database's traffic ends when its seeding ended, so `period` `5min` and `30min` (which
end at the call) would find an empty window and measure nothing. `top_up` stores visits that
started in the last `minutes`, at the rate of the seed's last day (events per minute), shaped as
the seed's (bench/harness/visits.py: page views with heartbeats every 15 s, goals, returning
visitors), through the same sinks, and merges them into the rollups as ingest's merge does
(`app.rollups.merging.merge`), so a rolling window reads what it would read on a live site.
"""
import random
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from bench.harness.seed import DOMAIN, PostgresSink, SqliteSink
from bench.harness.visits import Row, session_events

EVENTS_PER_VISIT = 12  # about what the seed's visits hold (bench/README.md, the seeds)


def seed_rate(app: Any) -> tuple[int, int, int, float]:
    """(site id, its visitors, its visits, events per minute over the seed's last day)."""
    from peewee import fn

    from models import Event, Site, Visit, database

    with app.app_context(), database.connection_context():
        site = Site.get(Site.domain == DOMAIN).id
        last = Event.select(Event.occurred_at).where(Event.site_id == site).order_by(
            Event.occurred_at.desc()).limit(1).scalar()
        day = Event.select().where(Event.site_id == site,
                                   Event.occurred_at > last - timedelta(days=1)).count()
        visitors, visits = Visit.select(fn.COUNT(Visit.visitor.distinct()), fn.COUNT(
            Visit.id)).where(Visit.site_id == site).tuples().get()
    return site, max(visitors, 2), visits, day / 1440


def live_rows(site: int, visitors: int, visits: int, per_minute: float, minutes: int,
              now: datetime) -> Iterator[Row]:
    """Visits starting in the last `minutes` before `now`, each event at most `now`; a third
    by visitors seen before (the seed's ids are a1 .. a<visitors>), the rest by new ones (ids
    past the seed's visits, so none was seen)."""
    rng = random.Random()
    run = uuid.uuid4().hex[:8]  # session ids of their own in each run
    count = max(round(per_minute * minutes / EVENTS_PER_VISIT), 1)
    for number, start in enumerate(sorted(now - timedelta(seconds=rng.uniform(0, minutes * 60))
                                          for _ in range(count))):
        visitor = rng.randrange(1, visitors) if rng.random() < 0.33 else visits + 1 + number
        for row in session_events(rng, site, DOMAIN, start, f"live-{run}-{number}", visitor,
                                  1.0):
            if row[0][3] <= now:
                yield row


def top_up(app: Any, url: str, minutes: int = 30) -> int:
    """Store and merge the last `minutes` of traffic; the events stored."""
    from app.rollups import merging
    from app.storage.db import release_connections
    from models import database

    site, visitors, visits, per_minute = seed_rate(app)
    release_connections()
    sink = SqliteSink(url.removeprefix("sqlite:///")) if url.startswith("sqlite") else \
        PostgresSink(url)
    stored = sink.events(live_rows(site, visitors, visits, per_minute, minutes,
                                   datetime.utcnow()))
    sink.connection.commit()  # (no sink.finish(): its VACUUM ANALYZE of the whole database)
    sink.connection.close()
    with app.app_context(), database.connection_context():
        merging.merge(wait_seconds=60)
    release_connections()
    return stored
