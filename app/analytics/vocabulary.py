"""The one table of the agent's `query` vocabulary (DESIGN.md, "The agent read surface"): every
metric and dimension with its one-line definition and its SQL on PostgreSQL and SQLite.

A dimension's SQL is a function of `Row`, the columns it reads from: `event` (the Event model,
the selected event) and `visit` (the visits CTE's columns: the visit's first page view). The
visit columns are named after the dimension (`visit:country` -> column `country` of the visit
table, models.Visit), so a query reads only the visit columns it uses.
"""
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from peewee import SQL, Case, ColumnBase, fn

from app.analytics.base import ArgumentError, Period, unknown
from app.db import is_postgres
from app.sql import json_text, page_path, url_host

PROPS = "event:props:"
MAX_PROPERTY_KEY = 128


@dataclass(frozen=True)
class Metric:
    name: str
    definition: str


METRICS = {metric.name: metric for metric in (
    Metric("visitors", "Distinct visitor ids (anonymousId) of the counted visits."),
    Metric("visits", "Visits (a session id with at least one page view in the period) that "
                     "have at least one selected event."),
    Metric("pageviews", "Selected events of type pageview."),
    Metric("events", "Selected events of any type, in a visit or not."),
    Metric("bounce_rate", "% of counted visits with exactly one page view and no click, "
                          "form_submit, custom, goal or heartbeat (1 decimal)."),
    Metric("views_per_visit", "All page views of the counted visits / visits (2 decimals)."),
    Metric("visit_duration", "Mean seconds from a counted visit's first to its last event."),
    Metric("conversion_rate", "% of the visits counted without the goal condition that have "
                              "the goal; needs event:goal as a dimension or an `is` filter "
                              "(1 decimal)."),
    Metric("percentage", "A row's visitors as % of all visitors of the query; needs a "
                         "dimension (1 decimal)."),
)}
RATES = frozenset({"bounce_rate", "conversion_rate"})  # compared in points, not percent


@dataclass(frozen=True)
class Row:
    """Where a dimension's SQL reads: the selected event, and the visits CTE's columns; or,
    reading the rollups (app.rollups) in the events' place, their page (`page`, for event:page)
    and time (`time`, for time:*) columns."""

    event: Any
    visit: Any
    period: Period
    page: Any = None
    time: Any = None


@dataclass(frozen=True)
class Dimension:
    name: str
    definition: str
    kind: str  # event, visit or time
    sql: Callable[[Row], ColumnBase]


def hostname(event: Any) -> ColumnBase:
    return fn.COALESCE(event.hostname, url_host(event.page_url))


def property_key(dimension: str) -> str:
    return dimension[len(PROPS):]


def property_text(event: Any, key: str) -> ColumnBase:
    """A property's value as text. SQLite addresses the key as a quoted JSON path member (the
    key stays a bound parameter on both databases)."""
    if is_postgres():
        return json_text(event.properties, key)
    return fn.json_extract(event.properties, f'$."{key}"').coerce(False).cast("TEXT")


# --- Time: local buckets ----------------------------------------------------------------

def offset_changes(zone: ZoneInfo, start: datetime, end: datetime) -> list[tuple[datetime, int]]:
    """[(from UTC instant, UTC offset in seconds)] covering [start, end): where the zone's
    offset changes (DST), found hour by hour and then to the minute."""

    def offset(instant: datetime) -> int:
        local = instant.replace(tzinfo=UTC).astimezone(zone)
        return int(local.utcoffset().total_seconds())  # type: ignore[union-attr]

    changes = [(start, offset(start))]
    hour = timedelta(hours=1)
    moment = start
    while moment < end:
        following = moment + hour
        if offset(following) != changes[-1][1]:
            low, high = moment, following  # offset(low) is the old one, offset(high) the new
            while high - low > timedelta(minutes=1):
                middle = low + (high - low) / 2
                low, high = (middle, high) if offset(middle) == changes[-1][1] else (low, middle)
            changes.append((high, offset(high)))
        moment = following
    return changes


FORMATS = {"hour": "%Y-%m-%dT%H:00", "day": "%Y-%m-%d", "week": "%Y-%m-%d", "month": "%Y-%m"}


def utc_offset(column: Any, period: Period) -> Any:
    """The zone's UTC offset in seconds at the naive UTC instant `column`: a CASE over the DST
    segments of the period (offset_changes), so the database converts without time zone
    functions (SQLite has none; PostgreSQL's AT TIME ZONE costs ~1 µs a row, more than the
    scan: 5.8 s against 2.7 s for 3.5 million events grouped by local day)."""
    changes = offset_changes(period.zone, period.start, period.end)
    if len(changes) == 1:
        return changes[0][1]
    return Case(None, [(column < until, seconds) for until, seconds
                       in zip([at for at, _ in changes[1:]],
                              [seconds for _, seconds in changes], strict=False)],
                changes[-1][1])


def time_bucket(unit: str, column: Any, period: Period) -> ColumnBase:
    """The local hour, day, week (its Monday) or month of a naive UTC `column`: the instant
    moved by its UTC offset (utc_offset), then truncated (PostgreSQL; `bucket_text` formats
    the few buckets after the grouping: to_char on each of 320,000 visits cost 90 ms) or
    formatted as text (SQLite)."""
    offset = 0 if period.timezone == "UTC" else utc_offset(column, period)
    if is_postgres():
        local = column if period.timezone == "UTC" else column + offset * SQL(
            "interval '1 second'")
        return fn.date_trunc(unit, local)
    modifier = fn.printf("%+d seconds", offset)
    # whole seconds: SQLite's date functions round to milliseconds, which would move
    # 23:59:59.9999 into the next day; the offsets are whole seconds, so flooring is exact
    seconds = fn.substr(column, 1, len("YYYY-MM-DD HH:MM:SS"))
    if unit == "week":
        return fn.date(seconds, modifier, "-6 days", "weekday 1")
    return fn.strftime(FORMATS[unit], seconds, modifier)


def bucket_text(dimension: "Dimension", value: Any) -> Any:
    """A time:* bucket as the results give it (YYYY-MM-DD, ...): PostgreSQL's truncated
    instant formatted; other values as they are."""
    if dimension.kind != "time" or not isinstance(value, datetime):
        return value
    return value.strftime(FORMATS[dimension.name.split(":", 1)[1]])


def _time(unit: str, what: str) -> Dimension:
    return Dimension(f"time:{unit}", f"The local {what}"
                                     f"{'' if unit != 'week' else ' (its Monday)'} in the site's "
                                     "time zone: an event's own, a visit's first event's in the "
                                     "period.", "time",
                     lambda row: time_bucket(unit, row.event.occurred_at if row.time is None
                                             else row.time, row.period))


def _event(name: str, definition: str, sql: Callable[[Any], ColumnBase]) -> Dimension:
    return Dimension(f"event:{name}", definition, "event", lambda row: sql(row.event))


def _visit(name: str, definition: str) -> Dimension:
    return Dimension(f"visit:{name}", definition, "visit",
                     lambda row: getattr(row.visit, name))


DIMENSIONS = {dimension.name: dimension for dimension in (
    Dimension("event:page", "The event's page path (no query string).", "event",
              lambda row: page_path(row.event) if row.page is None else row.page),
    _event("hostname", "The event's page host, without www.", hostname),
    _event("type", "The event type: pageview, click, form_submit, scroll, performance, custom, "
                   "goal, error, heartbeat.", lambda e: e.type),
    _event("name", "The name of a named event (custom events and goals).", lambda e: e.name),
    _event("goal", "The goal's name (goal events only).",
           lambda e: Case(None, [(e.type == "goal", e.name)])),
    _visit("country", "ISO 3166-1 alpha-2 country of the visit (DE)."),
    _visit("device", "Desktop, Mobile or Tablet."),
    _visit("browser", "Browser family (Chrome, Safari, Firefox, ...)."),
    _visit("browser_version", "Browser major version (\"131\")."),
    _visit("os", "Operating system (Windows, macOS, iOS, Android, ...)."),
    _visit("os_version", "Operating system major version."),
    _visit("language", "Primary language subtag, lower case (de)."),
    _visit("screen", "small (< 576 px), medium, large or xlarge (>= 1440 px)."),
    _visit("source", "utm_source, else a known referrer name, else the referrer host; "
                     "(direct) without one."),
    _visit("channel", "Direct, Organic Search, Paid Search, Organic Social, Paid Social, "
                      "Email, AI Assistants, Referral or Other."),
    _visit("referrer", "The referrer URL without query string and fragment."),
    _visit("utm_source", "utm_source of the entry page's URL."),
    _visit("utm_medium", "utm_medium of the entry page's URL."),
    _visit("utm_campaign", "utm_campaign of the entry page's URL."),
    _visit("utm_content", "utm_content of the entry page's URL."),
    _visit("utm_term", "utm_term of the entry page's URL."),
    _visit("entry_page", "Path of the visit's first page view."),
    _visit("exit_page", "Path of the visit's last page view."),
    _time("hour", "hour"), _time("day", "day"), _time("week", "week"),
    _time("month", "month"),
)}
PROPS_DEFINITION = "event:props:<key>: the event's property <key>, as text."
DIMENSION_NAMES = (*DIMENSIONS, f"{PROPS}<key>")


def dimension(name: Any, argument: str = "dimension") -> Dimension:
    """The vocabulary's dimension `name`, or an ArgumentError naming `argument`."""
    if isinstance(name, str) and name.startswith(PROPS):
        key = property_key(name)
        if not 1 <= len(key) <= MAX_PROPERTY_KEY or '"' in key or not key.isprintable():
            raise ArgumentError(f"Invalid {argument} {name!r}: a property key is 1 to "
                                 f"{MAX_PROPERTY_KEY} printable characters without '\"'.")
        return Dimension(name, PROPS_DEFINITION, "event",
                         lambda row: property_text(row.event, key))
    found = DIMENSIONS.get(name) if isinstance(name, str) else None
    if found is None:
        raise unknown(argument, name, DIMENSION_NAMES)
    return found


def metric(name: Any) -> Metric:
    found = METRICS.get(name) if isinstance(name, str) else None
    if found is None:
        raise unknown("metric", name, tuple(METRICS))
    return found


def seconds_between(first: Any, last: Any) -> ColumnBase:
    if is_postgres():
        return fn.date_part("epoch", last - first)
    return (fn.julianday(last) - fn.julianday(first)) * 86400


def describe() -> dict[str, Any]:
    """The vocabulary with its definitions, for describe_data."""
    return {"metrics": {name: m.definition for name, m in METRICS.items()},
            "dimensions": {**{name: d.definition for name, d in DIMENSIONS.items()},
                           f"{PROPS}<key>": PROPS_DEFINITION.split(": ", 1)[1]}}

