"""Retention: do visitors come back? Cohorts of visitors by the interval (day, week from Monday,
month, local to the site's zone) of their first visit (or of each visit), and per later interval
the members that came back (docs/AGENTS.md, `retention`, states the definitions for agents).

What it reads, and why:
- the visit table (models.Visit, merged after ingest): the visits that place a visitor in a
  cohort are `query`'s visits of the range (period_rows.visits_cte), so the `filters` are
  compiled as `query` compiles them (filters.compile_filters); a visitor's first visit egis
  holds is the earliest `started_at` of its visit rows, every visitor's read in one pass
  (app.storage.dialect.earliest) rather than from its events; a return "any visit" is a visit
  of the interval, read as the placing visits are;
- the event table for a return on a page, goal or custom event (the events matching it, an
  index range as a funnel step's: funnel.step_events);
- the placing visits' storage-free mark (models.Visit.storage_free): a storage-free visitor's
  id lasts one UTC day, so it is a member that can never come back, which `warnings` says.
The database groups the members and their returns into the table's sums (`_sums`: a few rows
per cohort); Python lays them out as the cohort table. The default table has a faster read of
the same definitions where the database orders each visitor's visits (retention_firsts).
"""
import functools
from datetime import date, timedelta
from typing import Any

from peewee import Case, Select, Table, Value, fn

from app.analytics import retention_firsts
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
from app.storage.dialect import earliest, orders_visits_by_visitor
from app.web.schema import whole_number
from models import Event, Site, Visit

INTERVALS = ("day", "week", "month")
COHORTS = ("first_visit", "any_visit")
RETURN_KINDS = ("page", "goal", "event")
DEFAULT_INTERVAL, DEFAULT_COHORT = "week", "first_visit"
DEFAULT_INTERVALS, MAX_INTERVALS = 7, 31
PLACED = "placed"  # the CTE of the visits that place a visitor, per visitor and interval
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
                    filters: Filters, name: str = "placing_visits"
                    ) -> tuple[list[Any], Select]:
    """(the CTEs it reads, the select of (visitor, bucket, w, storage_free)): per visitor and
    interval of the range, the visits that place it in a cohort (`query`'s visits, the filters
    applied), weighing their largest weight; storage_free 1 when one of them is storage-free
    (models.Visit.storage_free), else 0. `name`: the visits' CTE."""
    filters = bind_site(filters, site.id)  # has_done reads the site's events
    built, visits = visits_cte(site, cohorts, visit_columns((), filters)
                               | {"occurred_at", "storage_free"}, name)
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
             placed: Any) -> tuple[list[Any], Any]:
    """(the CTEs it reads beside `placed`, the CTE) of each cohort's members (visitor, bucket,
    w, storage_free), from `placed` (_placing_visits' rows)."""
    if cohort == "any_visit":
        return [], placed
    # Every visitor's first visit, read in one pass (app.storage.dialect.earliest; PostgreSQL
    # reads it off the index visit_first_visits): asked per placed visitor instead, PostgreSQL
    # probed that index 420,000 times, 2.4 s of a weekly retention at 10 M events.
    first = earliest(Visit, Visit.visitor, Visit.started_at,
                     (Visit.site_id == site.id) & (Visit.pageviews > 0)
                     & Visit.visitor.is_null(False), "first_visits")
    f, p = first.c, placed.c
    members = Select(
        [placed.join(first, on=(f.partition == p.visitor) & (f.earliest >= cohorts.start)
                     & (time_bucket(interval, f.earliest, horizon) == p.bucket))],
        [p.visitor, p.bucket, p.w, p.storage_free])
    return [first], members.cte("members", materialized=True)


def _sums(site: Site, cohorts: Period, horizon: Period, interval: str, cohort: str,
          filters: Filters, return_on: dict[str, str] | None) -> list[dict[str, Any]]:
    """The cohort table's sums, grouped by the database in one statement: per cohort ("size")
    its members' weight and whether any is sampled; per cohort and interval of return
    ("cell") the weight of the members back in it; and ("free") the weight of the
    storage-free members, each visitor once at its largest. Grouped in Python instead, a
    weekly retention at 10 M events moved 380,000 members and 600,000 returns out of
    PostgreSQL: 7 s, 3 of them in Python. The default table (first-visit cohorts up to the
    current interval, any visit a return, no filters) is read in one ordered pass where an
    index orders each visitor's visits (retention_firsts, PostgreSQL: 1.7 s -> 0.9 s at 10 M
    events); SQLite, which would sort them, reads it as every table (0.36 s at 1 M)."""
    if (cohort == "first_visit" and _placed_are_returns(cohorts, horizon, filters, return_on)
            and orders_visits_by_visitor()):
        return retention_firsts.sums(site, cohorts, interval)  # the same table, read faster
    return general_sums(site, cohorts, horizon, interval, cohort, filters, return_on)


def _placed_are_returns(cohorts: Period, horizon: Period, filters: Filters,
                        return_on: dict[str, str] | None) -> bool:
    """Whether the returns are the placing visits themselves: any visit is a return, no filter
    narrows the placing visits, and the horizon is the cohorts' range."""
    return return_on is None and not filters and horizon == cohorts


def general_sums(site: Site, cohorts: Period, horizon: Period, interval: str, cohort: str,
                 filters: Filters, return_on: dict[str, str] | None) -> list[dict[str, Any]]:
    """_sums for every table: the members read once (materialized); the placing visits grouped
    per visitor and interval, joined to each visitor's first visit (first-visit cohorts), and
    to the returns. A return "any visit" is a visit of the horizon as the placing visits are:
    without filters, over the cohorts' own range, they are the same rows, grouped once (the
    second grouping was 0.6 s of 2.1 at 10 M events)."""
    built, placing = _placing_visits(site, cohorts, horizon, interval, filters)
    placed = placing.cte(PLACED, materialized=True)
    more, members = _members(site, cohorts, horizon, interval, cohort, placed)
    ctes = [*built, placed, *more] + ([] if members is placed else [members])
    if _placed_are_returns(cohorts, horizon, filters, return_on):
        # under a second name: the members may be `placed` itself
        returns = Table(PLACED, alias="returns")
    else:
        read, returning = _returns(site, horizon, interval, return_on)
        returns = returning.cte("returns")
        ctes += [*read, returns]
    m, r = members.c, returns.c
    sampled = fn.MAX(Case(None, [(m.w != 1, 1)], 0))
    sizes = Select([members], [Value("size").alias("kind"), m.bucket.alias("cohort"),
                               m.bucket.alias("back"), fn.SUM(m.w).alias("w"),
                               sampled.alias("sampled")]).group_by(m.bucket)
    cells = Select([members.join(returns, on=(r.visitor == m.visitor))],
                   [Value("cell"), m.bucket, r.bucket, fn.SUM(m.w), Value(0)]
                   ).group_by(m.bucket, r.bucket)
    free = (Select([members], [m.visitor, fn.MIN(m.bucket).alias("bucket"),
                               fn.MAX(m.w).alias("w")])
            .where(m.storage_free == 1).group_by(m.visitor).alias("free"))
    unfollowed = Select([free], [Value("free"), fn.MIN(free.c.bucket), fn.MIN(free.c.bucket),
                                 fn.SUM(free.c.w), Value(0)])
    return fetch((sizes + cells + unfollowed).with_cte(*ctes))


def _returns(site: Site, horizon: Period, interval: str, return_on: dict[str, str] | None
             ) -> tuple[list[Any], Select]:
    """(the CTEs it reads, the select of (visitor, bucket)): the intervals of the horizon in
    which a visitor came back, by a visit of the horizon (`query`'s visits, as the placing
    visits are read) or by an event matching `return_on`."""
    if return_on is None:  # the visits of the horizon, as those that place a visitor
        return _placing_visits(site, horizon, horizon, interval, (), "return_visits")
    bucket = time_bucket(interval, Event.occurred_at, horizon)
    return [], (Event.select(Event.anonymous_id.alias("visitor"), bucket.alias("bucket"))
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
    sizes: dict[date, float] = {}
    back: dict[tuple[date, date], float] = {}
    estimated, unfollowed = False, 0
    for row in _sums(site, cohorts, horizon, interval, cohort, filters, return_on):
        if row["kind"] == "free":
            unfollowed = as_count(float(row["w"] or 0))
            continue
        start = _as_start(row["cohort"], interval)
        if row["kind"] == "size":
            sizes[start] = float(row["w"])
            estimated = estimated or bool(row["sampled"])
        else:
            back[(start, _as_start(row["back"], interval))] = float(row["w"])
    table = _table(starts, sizes, back, interval, intervals, current)
    found = {
        "timezone": period.timezone, "interval": interval, "cohort": cohort,
        "return_on": return_on, "from": cohorts.first.isoformat(),
        "to": cohorts.last.isoformat(), "current_interval": label(current, interval),
        "cohorts": table, "average": {"retention_rate": _average(table)},
        "estimated": estimated,
    }
    if unfollowed:  # as every tool but `query`: `warnings` only when there is one
        found["warnings"] = [STORAGE_FREE.format(count=unfollowed,
                                                 visitors=plural(unfollowed, "visitor"))]
    return found


def plural(count: int, noun: str) -> str:
    """`noun` as `count` of it reads in the warning's sentence ("1 visitor", "2 visitors")."""
    return noun if count == 1 else f"{noun}s"


def _interval_starts(cohorts: Period, interval: str) -> list[date]:
    starts, start = [], cohorts.first
    while start <= cohorts.last:
        starts.append(start)
        start = shifted(start, interval, 1)
    return starts


def _table(starts: list[date], sizes: dict[date, float],
           back: dict[tuple[date, date], float], interval: str, intervals: int,
           current: date) -> list[dict[str, Any]]:
    """The cohorts' rows: each cohort's members and, per interval after it that has begun,
    those back in it (`back`: the weight per (cohort, interval of return))."""
    table = []
    for start in starts:
        visitors = as_count(sizes.get(start, 0.0))
        counts = [as_count(back.get((start, cell), 0.0))
                  for cell in _cells(start, interval, intervals, current)]
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

