"""get_overview: the site's headline figures, each the `query` tool's own (the same compiler,
the same definitions: app.analytics.vocabulary): visitors, visits, pageviews, bounce_rate and
visit_duration over the period, and events by type."""
from typing import Any

from app.analytics.period import Period
from app.analytics.query import Query, read_figures
from app.analytics.reading import concurrently
from app.analytics.vocabulary import dimension
from models import Site
from models.event import EVENT_TYPES

METRICS = ("visitors", "visits", "pageviews", "bounce_rate", "visit_duration")
TOTALS = Query(METRICS, (), ())
BY_TYPE = Query(("events",), (dimension("event:type"),), (), limit=len(EVENT_TYPES))


def overview(site: Site, period: Period) -> dict[str, Any]:
    """{**METRICS, "events_by_type": {type: events, the most first}, "estimated"}: `query`'s
    answers to METRICS without dimensions and to events by event:type."""
    totals, by_type = concurrently(lambda: read_figures(site, period, TOTALS),
                                   lambda: read_figures(site, period, BY_TYPE))
    counted = sorted(((row["key"][0], row["events"]) for row in by_type.rows if row["events"]),
                     key=lambda item: (-item[1], item[0]))
    return {**{name: totals.totals[name] for name in METRICS},
            "events_by_type": dict(counted),
            "estimated": totals.estimated or by_type.estimated}
