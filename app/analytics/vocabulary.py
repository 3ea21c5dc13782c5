"""The read model's definitions, each written once: every metric and dimension of the agent's
vocabulary with its one-line definition and its SQL (on PostgreSQL and SQLite alike, through
app.storage.dialect). The `query` compiler, `get_overview`, `get_revenue`, describe_data's
vocabulary, the tool descriptions and docs/AGENTS.md's definitions table
(tests/analytics/test_vocabulary.py holds it to `definitions_table()`) all read them from here.

A dimension's SQL is a function of `Row`, the columns it reads from: `event` (the Event model,
the selected event) and `visit` (the visits CTE's columns: the visit's first page view). The
visit columns are named after the dimension (`visit:country` -> column `country` of the visit
table, models.Visit), so a query reads only the visit columns it uses. Every value is a column
stored at ingest (app.context: context and acquisition; migration 0016's task filled the rows stored
before those columns existed): nothing is parsed from a URL or a referrer at read time.

A metric is computed from the sums of its row (`SUMS`, the compiler's aggregates): `sums` names
those it reads, `value` turns them into the figure. conversion_rate and percentage also need
another row's sums (the compiler adds them).
"""
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from peewee import Case, ColumnBase

from app.analytics.errors import ArgumentError, unknown
from app.analytics.local_time import time_bucket
from app.analytics.numbers import percent
from app.analytics.period import Period
from app.storage.dialect import json_text, seconds_between
from models.visit import INTERACTIONS

PROPS = "event:props:"
MAX_PROPERTY_KEY = 128
# What the compiler sums per row: weighted events, page views, visits, bounced visits, their
# page views and durations, and visitors (each weighing its largest weight).
SUMS = ("events", "pageviews", "visits", "bounces", "views", "duration", "visitors")


@dataclass(frozen=True)
class VisitFigure:
    """One of a visit's own figures: the visits CTE's column that holds it (`visit_figure_sql`),
    its name among a statement's `selected` columns, and the entry of SUMS it adds to."""

    column: str
    selected: str
    sums: str


# Every table of a visit's figures reads this one.
VISIT_FIGURES = (VisitFigure("bounced", "bounced", "bounces"), VisitFigure("views", "vpv", "views"),
                 VisitFigure("duration", "vdur", "duration"))


def _count(name: str) -> Callable[[dict[str, float]], int]:
    return lambda sums: round(sums[name])


def _duration(sums: dict[str, float]) -> int | None:
    return round(sums["duration"] / sums["visits"]) if sums["visits"] else None


@dataclass(frozen=True)
class Metric:
    name: str
    definition: str
    sums: frozenset[str]  # of SUMS
    value: Callable[[dict[str, float]], Any] | None  # None: the compiler computes it
    rate: bool = False  # a percentage of visits: compared in points, not percent


METRICS = {metric.name: metric for metric in (
    Metric("visitors", "Distinct visitor ids (anonymousId) of the counted visits.",
           frozenset({"visitors"}), _count("visitors")),
    Metric("visits", "Visits (a session id with a page view in the period) that have a "
                     "selected event.", frozenset({"visits"}), _count("visits")),
    Metric("pageviews", "Selected events of type pageview.", frozenset({"pageviews"}),
           _count("pageviews")),
    Metric("events", "Selected events of any type, in a visit or not.", frozenset({"events"}),
           _count("events")),
    Metric("bounce_rate", f"% of counted visits with one page view and no "
                          f"{', '.join(INTERACTIONS[:-1])} or {INTERACTIONS[-1]} (1 decimal).",
           frozenset({"visits", "bounces"}),
           lambda sums: percent(sums["bounces"], sums["visits"]), rate=True),
    Metric("views_per_visit", "Page views of the counted visits / visits (2 decimals).",
           frozenset({"visits", "views"}),
           lambda sums: round(sums["views"] / sums["visits"], 2) if sums["visits"] else None),
    Metric("visit_duration", "Mean seconds from a counted visit's first to its last event in "
                             "the period (integer).", frozenset({"visits", "duration"}),
           _duration),
    Metric("conversion_rate", "% of the visits counted without the goal condition that have "
                              "the goal (1 decimal); needs event:goal as a dimension or an "
                              "`is` filter.", frozenset({"visits"}), None, rate=True),
    Metric("percentage", "A row's visitors as % of all visitors of the query (1 decimal); "
                         "needs a dimension.", frozenset({"visitors"}), None),
    Metric("total_revenue", "Payments minus refunds of the trusted server events in the period, "
                            "in major units (exact: 68.99, JPY 500) of one currency "
                            "(`currency`), each credited to a visit as get_revenue credits it.",
           frozenset(), None),
    Metric("orders", "Payments with a positive amount, credited as for total_revenue.",
           frozenset(), None),
    Metric("average_revenue", "total_revenue / orders, rounded half up to the currency's "
                              "digits.", frozenset(), None),
)}
# the money metrics: their own statement (app.analytics.query.money), no event:* dimension
MONEY_METRICS = ("total_revenue", "orders", "average_revenue")
RATES = frozenset(name for name, metric in METRICS.items() if metric.rate)
# what a rolling window (period 5min, 30min) answers: a visit there is any session with an
# event in the window, whose bounces, views and duration lie mostly outside it
ROLLING_METRICS = ("visitors", "visits", "pageviews", "events", "percentage", "conversion_rate")


def figures(sums: dict[str, Any]) -> dict[str, Any]:
    """Every metric that its own row's sums give, from those sums (SUMS, None as 0)."""
    found = {name: float(sums.get(name) or 0) for name in SUMS}
    return {name: metric.value(found) for name, metric in METRICS.items() if metric.value}


def visit_figure_sql(visit: Any) -> dict[str, Any]:
    """A visit's own figures (VISIT_FIGURES' columns) in SQL, from its row (models.Visit's
    columns, or a row derived like it): `bounced` (1 for a bounce: bounce_rate), `views`
    (views_per_visit) and `duration` (visit_duration), and `occurred_at` (its first event:
    time:* buckets it)."""
    return {"occurred_at": visit.started_at, "views": visit.pageviews,
            "bounced": Case(None, [((visit.pageviews == 1) & (visit.interactions == 0), 1)], 0),
            "duration": seconds_between(visit.started_at, visit.ended_at)}


@dataclass(frozen=True)
class Row:
    """Where a dimension's SQL reads: the selected event, and the visits CTE's columns; or,
    reading the rollups in the events' place, their page (`page`, for event:page) and time
    (`time`, for time:*) columns, and `sessions`: given a has_done node's inner filter, the
    session ids the rollups find for it, or None where the events must be read."""

    event: Any
    visit: Any
    period: Period
    page: Any = None
    time: Any = None
    sessions: Callable[[Any], Any] | None = None


@dataclass(frozen=True)
class Dimension:
    name: str
    definition: str
    kind: str  # event, visit or time
    sql: Callable[[Row], ColumnBase]
    # why a visit may have no value (app.analytics.query.null_rows): "address", "browser",
    # "referrer", "utm" or None
    missing: str | None = None

    @property
    def column(self) -> str:
        """The visit table's column (a visit:* dimension)."""
        return self.name.split(":", 1)[1]


def property_key(dimension: str) -> str:
    return dimension[len(PROPS):]


def _time(unit: str) -> Dimension:
    what = {"minute": "minute (YYYY-MM-DDTHH:MM; a period of one day at most)", "hour": "hour",
            "day": "day", "week": "week (its Monday)", "month": "month"}[unit]
    return Dimension(f"time:{unit}", f"The local {what} in the site's time zone: an event's "
                                     "own, a visit's first event's in the period.", "time",
                     lambda row: time_bucket(unit, row.event.occurred_at if row.time is None
                                             else row.time, row.period))


def _event(name: str, definition: str, sql: Callable[[Any], ColumnBase]) -> Dimension:
    return Dimension(f"event:{name}", definition, "event", lambda row: sql(row.event))


def _visit(name: str, definition: str, missing: str | None = None) -> Dimension:
    return Dimension(f"visit:{name}", definition, "visit", lambda row: getattr(row.visit, name),
                     missing)


def _utm(name: str) -> Dimension:
    return _visit(f"utm_{name}", f"utm_{name} of the entry page's URL; null without one.", "utm")


DIMENSIONS = {dimension.name: dimension for dimension in (
    Dimension("event:page", "The event's page path (no query string).", "event",
              lambda row: row.event.path if row.page is None else row.page),
    _event("hostname", "The event's page host, without www.", lambda e: e.hostname),
    _event("type", "The event type: pageview, click, form_submit, scroll, performance, custom, "
                   "goal, error, heartbeat.", lambda e: e.type),
    _event("name", "The name of a named event (custom events and goals).", lambda e: e.name),
    _event("goal", "The goal's name (goal events only: so are the totals of a breakdown by "
                   "it, the conversions).",
           lambda e: Case(None, [(e.type == "goal", e.name)])),
    _visit("country", "ISO 3166-1 alpha-2 country of the visit (DE); null for private, "
                      "reserved or unknown addresses.", "address"),
    _visit("device", "Desktop, Mobile or Tablet.", "browser"),
    _visit("browser", "Browser family (Chrome, Safari, Firefox, ...).", "browser"),
    _visit("browser_version", "Browser major version (\"131\").", "browser"),
    _visit("os", "Operating system (Windows, macOS, iOS, Android, ...).", "browser"),
    _visit("os_version", "Operating system major version.", "browser"),
    _visit("language", "Primary language subtag, lower case (de).", "browser"),
    _visit("screen", "The viewport width the tracker sent, not the device's: small (< 576 px), "
                     "medium, large or xlarge (>= 1440 px); a phone reports ~980 px (medium) "
                     "on a page without a viewport meta tag.", "browser"),
    _visit("source", "utm_source, else a known referrer name (Google), else the referrer host; "
                     "(direct) without a referrer or from the site itself.", "referrer"),
    _visit("channel", "Direct, Organic Search, Paid Search, Organic Social, Paid Social, "
                      "Email, AI Assistants, Referral or Other.", "referrer"),
    _visit("referrer", "The entry page view's referrer URL without query and fragment; null "
                       "without one: a referrer from the site itself is no referrer of a "
                       "visit.", "referrer"),
    *(_utm(name) for name in ("source", "medium", "campaign", "content", "term")),
    _visit("visitor_type", "new when the visit is the first visit egis holds of its visitor "
                           "(anonymousId), in any period; else returning. A storage-free "
                           "visitor has a new id each day: its first visit of a day is new."),
    _visit("entry_page", "Path of the visit's first page view."),
    _visit("exit_page", "Path of the visit's last page view."),
    *(_time(unit) for unit in ("minute", "hour", "day", "week", "month")),
)}
PROPS_DEFINITION = "The event's property <key>, as text."
# the filters on visits by their events (app.analytics.filters compiles them)
FILTER_OPS = {
    "has_done": "[\"has_done\", filter]: the visits with at least one event in the period "
                "matching the filter (on event:* dimensions: a leaf, or and/or/not of leaves), "
                "with all their events.",
    "has_not_done": "[\"has_not_done\", filter]: the visits with no such event.",
}
DIMENSION_NAMES = (*DIMENSIONS, f"{PROPS}<key>")
DIRECT = "(direct)"  # visit:source without a referrer (app.context.acquisition's DIRECT_SOURCE)


def dimension(name: Any, argument: str = "dimension") -> Dimension:
    """The vocabulary's dimension `name`, or an ArgumentError naming `argument`."""
    if isinstance(name, str) and name.startswith(PROPS):
        key = property_key(name)
        if not 1 <= len(key) <= MAX_PROPERTY_KEY or '"' in key or not key.isprintable():
            raise ArgumentError(f"Invalid {argument} {name!r}: a property key is 1 to "
                                 f"{MAX_PROPERTY_KEY} printable characters without '\"'.")
        return Dimension(name, PROPS_DEFINITION, "event",
                         lambda row: json_text(row.event.properties, key))
    found = DIMENSIONS.get(name) if isinstance(name, str) else None
    if found is None:
        raise unknown(argument, name, DIMENSION_NAMES)
    return found


def metric(name: Any) -> Metric:
    found = METRICS.get(name) if isinstance(name, str) else None
    if found is None:
        raise unknown("metric", name, tuple(METRICS))
    return found


def describe() -> dict[str, Any]:
    """The vocabulary with its definitions, for describe_data."""
    return {"metrics": {name: m.definition for name, m in METRICS.items()},
            "dimensions": {**{name: d.definition for name, d in DIMENSIONS.items()},
                           f"{PROPS}<key>": PROPS_DEFINITION},
            "filters": dict(FILTER_OPS)}


def definitions_table() -> str:
    """docs/AGENTS.md's table of definitions (Markdown), as the vocabulary states them."""
    found = describe()
    lines = ["| name | definition |", "|---|---|"]
    for kind in ("metrics", "dimensions", "filters"):
        lines += [f"| `{name}` | {text.replace('|', '/')} |"
                  for name, text in found[kind].items()]
    return "\n".join(lines)
