"""Retention: do visitors come back? Cohorts of visitors by the interval (day, week from Monday,
month, local to the site's zone) of their first visit (or of each visit), and per later interval
the members that came back (docs/AGENTS.md, `retention`, states the definitions for agents).

What it reads, and why:
- the visit table (models.Visit, merged after ingest): the visits that place a visitor in a
  cohort are `query`'s visits of the range (period_rows.visits_cte), so the `filters` are
  compiled as `query` compiles them (filters.compile_filters); a visitor's first visit egis
  holds is the earliest `started_at` of its visit rows, one index lookup per visitor rather than
  a scan of its events; a return "any visit" is a visit row begun in the interval;
- the event table for a return on a page, goal or custom event (the events matching it, an
  index range as a funnel step's: funnel.step_events);
- the placing visits' storage-free mark (models.Visit.storage_free): a storage-free visitor's
  id lasts one UTC day, so it is a member that can never come back, which `warnings` says.
The database groups rows to (visitor, local interval) pairs; Python lays them out as the cohort
table, whose size is at most the members times the intervals.
"""
import functools
from datetime import date, timedelta
from typing import Any

from peewee import Case, Select, fn

from app.analytics.errors import ArgumentError, unknown
from app.analytics.events import event_scope, fetch
from app.analytics.filters import Filters, bind_site, compile_filters
from app.analytics.funnel import checked_step, step_events
from app.analytics.local_time import bucket_text, time_bucket
from app.analytics.numbers import as_count, percent
from app.analytics.period import LAST_DAY, Period, today_in
from app.analytics.period_rows import visits_cte
from app.analytics.query.plan_shape import visit_columns
from app.analytics.vocabulary import Row
from app.web.schema import whole_number
from models import Event, Site, Visit

INTERVALS = ("day", "week", "month")
COHORTS = ("first_visit", "any_visit")
RETURN_KINDS = ("page", "goal", "event")
DEFAULT_INTERVAL, DEFAULT_COHORT = "week", "first_visit"
DEFAULT_INTERVALS, MAX_INTERVALS = 7, 31
DEFAULT_COHORT_COUNT = 8  # the interval holding today and the 7 before it
STORAGE_FREE = ("{count:,} {visitors} came without storage (data-storage=\"false\"): their id "
                "changes every day, so their later visits count as new visitors and their "
                "returns are not counted.")


def interval_start(day: date, interval: str) -> date:
    """The first day of the interval holding `day`."""
    if interval == "week":
        return day - timedelta(days=day.weekday())
    if interval == "month":
        return day.replace(day=1)
    return day


def shifted(start: date, interval: str, count: int) -> date:
    """The first day of the interval `count` intervals after the one beginning on `start`."""
    if interval == "day":
        return start + timedelta(days=count)
    if interval == "week":
        return start + timedelta(weeks=count)
    months = start.year * 12 + start.month - 1 + count
    return date(months // 12, months % 12 + 1, 1)


def label(start: date, interval: str) -> str:
    return start.strftime("%Y-%m") if interval == "month" else start.isoformat()


@functools.cache
def _as_start(bucket: Any, interval: str) -> date:
    """A time_bucket value (a datetime on PostgreSQL, text on SQLite) as its interval's first
    day; cached: a call reads tens of thousands of rows but only as many buckets as intervals
    (the Python share of a weekly retention at 1 M events on SQLite fell from 1.1 s to 0.3 s)."""
    text = bucket_text("month" if interval == "month" else "day", bucket)
    return date.fromisoformat(text + "-01" if interval == "month" else text[:10])


def validate(arguments: dict[str, Any]) -> dict[str, Any]:
    """The retention arguments (interval, cohort, return_on, intervals) checked, with their
    defaults, or an ArgumentError naming the bad one. A function rather than a marshmallow
    schema, as funnel.validate: one sentence naming the argument and the closest value."""
    interval = arguments.get("interval", DEFAULT_INTERVAL)
    if interval not in INTERVALS:
        raise unknown("interval", interval, INTERVALS)
    cohort = arguments.get("cohort", DEFAULT_COHORT)
    if cohort not in COHORTS:
        raise unknown("cohort", cohort, COHORTS)
    raw = arguments.get("intervals", DEFAULT_INTERVALS)
    count = whole_number(raw)
    if count is None or not 1 <= count <= MAX_INTERVALS:
        raise ArgumentError(f"`intervals` must be a whole number from 1 to {MAX_INTERVALS} "
                            f"(how many {interval}s after the cohort's to follow); got {raw!r}.")
    return_on = arguments.get("return_on")
    if return_on is not None:
        if not isinstance(return_on, dict) or "label" in return_on:
            raise ArgumentError("`return_on` must be one of {\"page\": path or pattern}, "
                                "{\"goal\": name} or {\"event\": custom event name}; leave it "
                                "out to count any visit.")
        return_on = {key: value for key, value in checked_step(0, return_on, "return_on").items()
                     if key != "label"}
    return {"interval": interval, "cohort": cohort, "intervals": count, "return_on": return_on}


def cohort_range(period: Period, interval: str, explicit: bool) -> Period:
    """The range's days widened to whole intervals; without `from`/`to`/`period`, the interval
    holding today and the DEFAULT_COHORT_COUNT - 1 before it."""
    if not explicit:
        current = interval_start(today_in(period.timezone), interval)
        first = shifted(current, interval, 1 - DEFAULT_COHORT_COUNT)
        return period.moved(first, shifted(current, interval, 1) - timedelta(days=1))
    first = interval_start(period.first, interval)
    last = shifted(interval_start(period.last, interval), interval, 1) - timedelta(days=1)
    return period.moved(first, min(last, LAST_DAY))


def _placing_visits(site: Site, cohorts: Period, horizon: Period, interval: str,
                    filters: Filters) -> tuple[list[Any], Select]:
    """(the CTEs it reads, the select of (visitor, bucket, w, storage_free)): per visitor and
    interval of the range, the visits that place it in a cohort (`query`'s visits, the filters
    applied), weighing their largest weight; storage_free 1 when one of them is storage-free
    (models.Visit.storage_free), else 0."""
    filters = bind_site(filters, site.id)  # has_done reads the site's events
    built, visits = visits_cte(site, cohorts, visit_columns((), filters)
                               | {"occurred_at", "storage_free"}, "placing_visits")
    v = visits.c
    bucket = time_bucket(interval, v.occurred_at, horizon)
    where = v.visitor.is_null(False)
    condition = compile_filters(filters, Row(None, v, cohorts))
    if condition is not None:
        where &= condition
    storage_free = fn.MAX(Case(None, [(v.storage_free, 1)], 0))
    return [*built, visits], (Select([visits], [v.visitor.alias("visitor"),
                                                bucket.alias("bucket"), fn.MAX(v.w).alias("w"),
                                                storage_free.alias("storage_free")])
                              .where(where).group_by(v.visitor, bucket))


def _members(site: Site, cohorts: Period, horizon: Period, interval: str, cohort: str,
             filters: Filters) -> list[dict[str, Any]]:
    """(visitor, bucket, w, storage_free) of each cohort's members."""
    built, placing = _placing_visits(site, cohorts, horizon, interval, filters)
    if cohort == "any_visit":
        return fetch(placing.with_cte(*built))
    placed = placing.cte("placed")
    first_at = fn.MIN(Visit.started_at)
    first = (Visit.select(Visit.visitor.alias("visitor"), first_at.alias("first_at"))
             .where((Visit.site_id == site.id) & (Visit.pageviews > 0)
                    & Visit.visitor.in_(Select([placed], [placed.c.visitor])))
             .group_by(Visit.visitor).having(first_at >= cohorts.start).cte("first_visits"))
    f, p = first.c, placed.c
    return fetch(Select([placed.join(first, on=(f.visitor == p.visitor)
                                     & (time_bucket(interval, f.first_at, horizon) == p.bucket))],
                        [p.visitor, p.bucket, p.w, p.storage_free])
                 .with_cte(*built, placed, first))


def _returns(site: Site, horizon: Period, interval: str, return_on: dict[str, str] | None
             ) -> Select:
    """(visitor, bucket): the intervals of the horizon in which a visitor came back."""
    if return_on is None:
        bucket = time_bucket(interval, Visit.started_at, horizon)
        return (Visit.select(Visit.visitor.alias("visitor"), bucket.alias("bucket"))
                .where((Visit.site_id == site.id) & (Visit.pageviews > 0)
                       & Visit.visitor.is_null(False) & horizon.covers(Visit.started_at))
                .group_by(Visit.visitor, bucket))
    bucket = time_bucket(interval, Event.occurred_at, horizon)
    return (Event.select(Event.anonymous_id.alias("visitor"), bucket.alias("bucket"))
            .where(event_scope(site.id, horizon) & Event.anonymous_id.is_null(False)
                   & step_events(return_on))
            .group_by(Event.anonymous_id, bucket))


def retention(site: Site, period: Period, interval: str = DEFAULT_INTERVAL,
              cohort: str = DEFAULT_COHORT, return_on: dict[str, str] | None = None,
              intervals: int = DEFAULT_INTERVALS, filters: Filters = (),
              explicit: bool = True) -> dict[str, Any]:
    """The cohort table of `period` (widened by cohort_range; `explicit`: the caller named
    the range), as docs/AGENTS.md describes its result. Call it within reading.reading()."""
    cohorts = cohort_range(period, interval, explicit)
    current = interval_start(today_in(period.timezone), interval)
    starts = [start for start in _interval_starts(cohorts, interval) if start <= current]
    horizon_last = min(shifted(current, interval, 1), shifted(cohorts.last, interval,
                                                              intervals + 1))
    horizon = cohorts.moved(cohorts.first, min(horizon_last - timedelta(days=1), LAST_DAY))
    members = _members(site, cohorts, horizon, interval, cohort, filters)
    member_ids = {row["visitor"] for row in members}
    came_back: dict[str, set[date]] = {}
    if member_ids:
        for row in fetch(_returns(site, horizon, interval, return_on)):
            if row["visitor"] in member_ids:
                came_back.setdefault(row["visitor"], set()).add(_as_start(row["bucket"],
                                                                          interval))
    table = _table(starts, members, came_back, interval, intervals, current)
    found = {
        "timezone": period.timezone, "interval": interval, "cohort": cohort,
        "return_on": return_on, "from": cohorts.first.isoformat(),
        "to": cohorts.last.isoformat(), "current_interval": label(current, interval),
        "cohorts": table, "average": {"retention_rate": _average(table)},
        "estimated": any(float(row["w"]) != 1 for row in members),
    }
    unfollowed = storage_free_visitors(members)
    if unfollowed:  # as every tool but `query`: `warnings` only when there is one
        found["warnings"] = [STORAGE_FREE.format(count=unfollowed,
                                                 visitors=plural(unfollowed, "visitor"))]
    return found


def storage_free_visitors(members: list[dict[str, Any]]) -> int:
    """How many of the members came without storage (each weighing, as in the cohorts, the
    largest weight of the visits that place it): their visitor id is derived per UTC day
    (app.tracking.anonymous), so a later visit of theirs is a new visitor's, never a return.
    The cohorts cannot tell them from visitors who never came back; the warning says how many
    there are, so that a reader does not take them for lost visitors."""
    weights: dict[str, float] = {}
    for row in members:
        if row["storage_free"]:
            weights[row["visitor"]] = max(weights.get(row["visitor"], 0.0), float(row["w"]))
    return as_count(sum(weights.values()))


def plural(count: int, noun: str) -> str:
    """`noun` as `count` of it reads in the warning's sentence ("1 visitor", "2 visitors")."""
    return noun if count == 1 else f"{noun}s"


def _interval_starts(cohorts: Period, interval: str) -> list[date]:
    starts, start = [], cohorts.first
    while start <= cohorts.last:
        starts.append(start)
        start = shifted(start, interval, 1)
    return starts


def _table(starts: list[date], members: list[dict[str, Any]], came_back: dict[str, set[date]],
           interval: str, intervals: int, current: date) -> list[dict[str, Any]]:
    cells = {start: _cells(start, interval, intervals, current) for start in starts}
    weights: dict[date, float] = {start: 0.0 for start in starts}
    retained: dict[date, list[float]] = {start: [0.0] * len(cells[start]) for start in starts}
    for row in members:
        start = _as_start(row["bucket"], interval)
        if start not in weights:
            continue
        weight = float(row["w"])
        weights[start] += weight
        sums = retained[start]
        returns = came_back.get(row["visitor"], ())
        for index, cell in enumerate(cells[start]):
            if cell in returns:
                sums[index] += weight
    table = []
    for start in starts:
        visitors = as_count(weights[start])
        counts = [as_count(value) for value in retained[start]]
        table.append({"cohort": label(start, interval), "visitors": visitors,
                      "retained": counts,
                      "retention_rate": [percent(count, visitors) for count in counts]})
    return table


def _cells(start: date, interval: str, intervals: int, current: date) -> list[date]:
    """The intervals 0..`intervals` after the cohort's that have begun."""
    cells = [shifted(start, interval, index) for index in range(intervals + 1)]
    return [cell for cell in cells if cell <= current]


def _average(table: list[dict[str, Any]]) -> list[float | None]:
    """Per cell, the retained summed over the cohorts that have it, as % of their visitors."""
    longest = max((len(row["retained"]) for row in table), default=0)
    average = []
    for index in range(longest):
        having = [row for row in table if len(row["retained"]) > index]
        average.append(percent(sum(row["retained"][index] for row in having),
                               sum(row["visitors"] for row in having)))
    return average

