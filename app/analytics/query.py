"""The `query` compiler: metrics x dimensions x filters of the vocabulary into one SQL statement
per figure set (rows, totals, a conversion denominator, a comparison period), on PostgreSQL
and SQLite alike. Definitions: DESIGN.md, "The agent read surface", and app.analytics.vocabulary.

The statement, as CTEs:
  visits          one row per visit of the period (a session id with a page view in the period,
                  with the values of its first page view in the period: DESIGN.md), built only
                  when a visit metric, dimension or filter needs it: the visit table's rows
                  (models.Visit, merged after ingest) of the visits whose events all lie in the
                  period, and, as a VALUES list, the few that cross its first or last instant,
                  derived from their events in the period (visits_cte).
  grouped         the events that event filters select, summed per (event and time dimensions,
                  session); not built when the rows are visits (no event or time dimension,
                  no event filter), which then read the visits alone.
  selected        grouped joined to its visit (or the visits themselves): the dimension values
                  d0, d1, d2, the visit's figures, and the visit filters applied; one row per
                  (dimension values, session), so a visit counts in a row when it has a selected
                  event with the row's values.
  per_visitor     per (dimension values, visitor): the event sums, the visit sums and the
                  visitor's weight, in one aggregate; `parts` sums them per row (grand 0) and
                  over everything (grand 1: the totals), UNION ALL. With an event or time
                  dimension the totals are a statement of their own (_figure_rows).
Weights: an event weighs its `weight`; a visit (a visitor) its largest weight.
"""
from dataclasses import dataclass, replace
from datetime import date, timedelta
from typing import Any

from peewee import JOIN, SQL, Case, EnclosedNodeList, NodeList, Select, Value, fn

from app.analytics.base import (
    ArgumentError,
    Period,
    can_run_concurrently,
    compare_period,
    concurrently,
    fetch,
    is_sampled,
    memoized,
    unknown,
    when,
)
from app.analytics.filters import Filters, Leaf, compile_filters, kinds, leaves, parse_filters
from app.analytics.period_rows import pages_cte, slot_rows, slots_cover, visits_cte
from app.analytics.vocabulary import (
    RATES,
    Dimension,
    Row,
    bucket_text,
    dimension,
    metric,
)
from app.db import is_postgres
from app.fields import whole_number
from app.sql import wide
from models import Event, EventSlot, Site, database
from models.event import EVENT_TYPES
from models.visit_page import NO_PAGE

MAX_METRICS, MAX_DIMENSIONS = 10, 3
MAX_LIMIT, DEFAULT_LIMIT = 1000, 100
ROW_CAP = 100_000  # grouped rows read per statement; beyond, a warning says the rest was cut
# "stored": events as stored rows, unweighted (count_events reports it)
SUMS = ("events", "stored", "pageviews", "visits", "bounces", "views", "duration", "visitors")
EVENT_METRICS = frozenset({"events", "pageviews"})
VISIT_METRICS = frozenset({"visitors", "visits", "bounce_rate", "views_per_visit",
                           "visit_duration", "conversion_rate", "percentage"})
GOAL = "event:goal"
PAGE = "event:page"
TYPE = "event:type"
# what one row per (visit, page) answers (app.analytics.period_rows.pages_cte)
PAGE_METRICS = frozenset({"visitors", "visits", "pageviews", "events", "percentage"})


@dataclass(frozen=True)
class Query:
    metrics: tuple[str, ...]
    dimensions: tuple[Dimension, ...]
    filters: Filters
    order_by: tuple[tuple[str, str], ...]
    limit: int = DEFAULT_LIMIT
    offset: int = 0
    compare: Any = None


# --- Arguments ---------------------------------------------------------------------------

def _names(raw: Any, argument: str, least: int, most: int) -> list[Any]:
    if raw is None:
        raw = []
    if not isinstance(raw, list) or not least <= len(raw) <= most:
        raise ArgumentError(f"`{argument}` must be a list of {least} to {most} names.")
    if len(set(map(str, raw))) != len(raw):
        raise ArgumentError(f"`{argument}` names one of them twice.")
    return raw


def _integer(raw: Any, argument: str, low: int, high: int, default: int) -> int:
    if raw is None:
        return default
    value = whole_number(raw)  # 100.0 is 100, as JSON Schema's integer says
    if value is None or not low <= value <= high:
        raise ArgumentError(f"`{argument}` must be an integer from {low} to {high}.")
    return value


def goal_leaf(filters: Filters) -> Leaf | None:
    """The top-level `is` filter on event:goal, which conversion_rate can use."""
    for node in filters:
        if isinstance(node, Leaf) and node.op == "is" and node.dimension.name == GOAL:
            return node
    return None


def parse_query(arguments: dict[str, Any]) -> Query:
    """The validated query; an ArgumentError names the first bad argument."""
    metrics = tuple(metric(name).name for name in
                    _names(arguments.get("metrics"), "metrics", 1, MAX_METRICS))
    dimensions = tuple(dimension(name) for name in
                       _names(arguments.get("dimensions"), "dimensions", 0, MAX_DIMENSIONS))
    filters = parse_filters(arguments.get("filters"))
    if "percentage" in metrics and not dimensions:
        raise ArgumentError("Metric 'percentage' needs a dimension: add one to `dimensions`.")
    names = [d.name for d in dimensions]
    if "conversion_rate" in metrics and GOAL not in names and goal_leaf(filters) is None:
        raise ArgumentError("Metric 'conversion_rate' needs 'event:goal' in `dimensions` or "
                            "an [\"is\", \"event:goal\", [...]] filter.")
    order = arguments.get("order_by")
    order_by = []
    if order is not None:
        if not isinstance(order, list):
            raise ArgumentError('`order_by` must be a list of [name, "asc"|"desc"] pairs.')
        for pair in order:
            if not isinstance(pair, list) or len(pair) != 2 or pair[1] not in ("asc", "desc"):
                raise ArgumentError(f'Invalid order_by {pair!r}: give [name, "asc"|"desc"].')
            if pair[0] not in (*metrics, *names):
                raise unknown("order_by name", pair[0], (*metrics, *names))
            order_by.append((pair[0], pair[1]))
    return Query(metrics, dimensions, filters, tuple(order_by),
                 _integer(arguments.get("limit"), "limit", 1, MAX_LIMIT, DEFAULT_LIMIT),
                 _integer(arguments.get("offset"), "offset", 0, 10**9, 0),
                 arguments.get("compare"))


# --- SQL -----------------------------------------------------------------------------------

def matching_sessions(site: Site, period: Period, filters: Filters) -> Select:
    """The session ids of the visits of `period` whose visit:* values satisfy `filters`
    (visit filters only, as parse_filters(..., visit_only=True) gives)."""
    built, visits = visits_cte(site, period, _visit_columns((), filters), "filtered_visits")
    condition = compile_filters(filters, Row(None, visits.c, period))
    query = Select([visits], [visits.c.session_id]).with_cte(*built, visits)
    return query.where(condition) if condition is not None else query


def _visit_columns(dimensions: tuple[Dimension, ...], filters: Filters) -> set[str]:
    used = [*dimensions, *(leaf.dimension for leaf in leaves(filters))]
    return {d.name.split(":", 1)[1] for d in used if d.kind == "visit"}


@dataclass(frozen=True)
class _Plan:
    """What one statement reads: its rows (`selected`: the dimension values d0.., event sums
    and, with visits, the visit's figures), the CTEs behind them, and an event-only sum for
    the totals when the visits alone are the rows."""

    ctes: list[Any]
    selected: Any
    has_visits: bool
    visit_rows: bool = False  # the rows are the visits: no event sums on them
    event_totals: Any = None  # the events' sums beside visit rows: over everything
    event_rows: Any = None  # and per row, when time:* splits events and visits apart


def _event_sums() -> list[Any]:
    """An event weighs its sampling weight; `stored` counts the rows as stored (COUNT(*): a
    column would keep PostgreSQL from counting them in a covering index alone)."""
    return [fn.SUM(wide(Event.weight)).alias("events"), fn.COUNT(SQL("*")).alias("stored"),
            fn.SUM(when(Event.type == "pageview", wide(Event.weight))).alias("pageviews"),
            fn.MAX(is_sampled(Event.weight)).alias("sampled")]


def _visit_figures(visits: Any, columns: set[str]) -> list[Any]:
    """A visit's figures in `selected`, of the visits CTE's `columns` (0 for the others)."""
    v = visits.c
    return [v.session_id.alias("vid"), v.visitor.alias("visitor"), v.w.alias("vw"),
            *[(getattr(v, column) if column in columns else Value(0)).alias(name)
              for column, name in (("bounced", "bounced"), ("views", "vpv"),
                                   ("duration", "vdur"))]]


def _visit_needs(query: Query, dimensions: tuple[Dimension, ...]) -> set[str]:
    """The visits CTE's columns a statement reads: its visit:* columns and figures."""
    needed = set().union(*(NEEDS[name] for name in query.metrics))
    return {*_visit_columns(dimensions, query.filters),
            *(["occurred_at"] if any(d.kind == "time" for d in dimensions) else []),
            *[column for column, sums in (("bounced", "bounces"), ("views", "views"),
                                          ("duration", "duration")) if sums in needed]}


def _is_pageviews(node: Any) -> bool:
    """`["is", "event:type", ["pageview"]]`: the page views alone."""
    return isinstance(node, Leaf) and node.dimension.name == TYPE and node.op == "is" \
        and node.values == ("pageview",)


def _page_plan_fits(query: Query, dimensions: tuple[Dimension, ...], keep: Any) -> bool:
    """Whether one row per (visit, page) answers the query: event:page as its dimension or
    filter and nothing else (but a top-level page-views-only filter), and metrics that need
    no more of the visit than whether it is one, its visitor and its weight."""
    kept = [node for node in query.filters
            if not _is_pageviews(node) and any(keep(leaf) for leaf in leaves((node,)))]
    on_pages = all(leaf.dimension.name == PAGE for leaf in leaves(tuple(kept)))
    return (set(query.metrics) <= PAGE_METRICS and on_pages
            and all(d.name == PAGE for d in dimensions) and bool(dimensions or kept))


def _page_plan(site: Site, period: Period, query: Query, dimensions: tuple[Dimension, ...],
               keep: Any) -> _Plan:
    """The rows of the visit pages (period_rows.pages_cte): by page they are the rows
    already, one per (page, session); without a dimension, summed per session."""
    built, pages = pages_cte(site, period)
    c = pages.c
    row = Row(None, None, period, page=fn.NULLIF(c.page, NO_PAGE))
    views_only = any(_is_pageviews(node) and keep(node) for node in query.filters)
    filters = tuple(node for node in query.filters if not _is_pageviews(node))
    where = compile_filters(filters, row, keep)
    if where is not None:
        # the same on the column itself where it holds a page, so that the planner estimates
        # it from the column's statistics (a regular expression on NULLIF(page, '') it takes
        # for 1 row in 200: 3,000 rows for 148,000, sorted where they would be hashed)
        where = ((c.page != NO_PAGE) & compile_filters(filters, replace(row, page=c.page), keep)
                 | (c.page == NO_PAGE) & where)
    if views_only:  # the page views alone: a visit counts where it viewed the page
        where = (c.views > 0) if where is None else where & (c.views > 0)
    events, stored = (c.pageviews, c.views) if views_only else (c.events, c.stored)
    # no bounce, views per visit or duration here (PAGE_METRICS)
    unread = [Value(0).alias(name) for name in ("bounced", "vpv", "vdur")]
    if dimensions:
        selected = Select([pages], [dimensions[0].sql(row).alias("d0"),
                                    events.alias("events"), stored.alias("stored"),
                                    c.pageviews, c.sampled, c.vid, c.visitor,
                                    c.w.alias("vw"), *unread])
    else:  # a session's visit figures are the same on each of its pages
        selected = Select([pages], [
            fn.SUM(events).alias("events"), fn.SUM(stored).alias("stored"),
            fn.SUM(c.pageviews).alias("pageviews"), fn.MAX(c.sampled).alias("sampled"),
            fn.MAX(c.vid).alias("vid"), fn.MAX(c.visitor).alias("visitor"),
            fn.MAX(c.w).alias("vw"), *unread]).group_by(c.sid)
    if where is not None:
        selected = selected.where(where)
    selected = selected.cte("selected")
    return _Plan([*built, pages, selected], selected, True)


def _slot_fits(period: Period, dimensions: tuple[Dimension, ...], filters: Filters,
               keep: Any) -> bool:
    """Whether the quarter-hour counts (models.EventSlot) answer the events' sums: time:*
    and event:type alone, over a period of whole quarter hours."""
    return (all(d.kind == "time" or d.name == TYPE for d in dimensions)
            and all(leaf.dimension.name == TYPE for leaf in leaves(filters) if keep(leaf))
            and slots_cover(period))


def _slot_sums(site: Site, period: Period, dimensions: tuple[Dimension, ...],
               filters: Filters, keep: Any, views_only: bool) -> Select:
    """The events' sums per row of `dimensions` from the quarter-hour counts (_slot_fits)."""
    row = Row(EventSlot, None, period, time=EventSlot.slot)
    where = slot_rows(site, period)
    condition = compile_filters(filters, row, keep)
    if condition is not None:
        where &= condition
    if views_only:
        where &= EventSlot.type == "pageview"
    keys = [f"d{index}" for index in range(len(dimensions))]
    return (EventSlot.select(
        *[d.sql(row).alias(key) for key, d in zip(keys, dimensions, strict=True)],
        fn.SUM(EventSlot.weight).alias("events"), fn.SUM(EventSlot.events).alias("stored"),
        fn.SUM(when(EventSlot.type == "pageview", EventSlot.weight)).alias("pageviews"),
        fn.MAX(is_sampled(EventSlot.top_weight)).alias("sampled"))
        .where(where).group_by(*[SQL(f'"{key}"') for key in keys]))


def _implied(filters: Filters, keep: Any) -> Any:
    """What the top-level `is` filters on an event's name or goal imply of its type and name,
    spelled so that the index of named events (site, type, name, time) serves them: a name
    is one of the types' (each a range of the index), a goal is a named event of type goal."""
    implied: Any = True
    for node in filters:
        if not (isinstance(node, Leaf) and node.op == "is" and keep(node)
                and None not in node.values):
            continue
        if node.dimension.name == "event:name":
            implied &= Event.type.in_(EVENT_TYPES) & Event.name.is_null(False)
        elif node.dimension.name == GOAL:
            implied &= (Event.type == "goal") & Event.name.is_null(False)
    return implied


def _plan(site: Site, period: Period, query: Query, dimensions: tuple[Dimension, ...],
          keep: Any, rows_only: bool) -> _Plan:
    filters = query.filters
    keys = [f"d{index}" for index in range(len(dimensions))]
    needs_visits = bool(VISIT_METRICS & set(query.metrics)) or "visit" in kinds(filters) \
        or any(d.kind == "visit" for d in dimensions)
    event_keys = [(key, d) for key, d in zip(keys, dimensions, strict=True)
                  if d.kind != "visit"]
    event_filtered = any(keep(leaf) and leaf.dimension.kind != "visit"
                         for leaf in leaves(filters))
    event_sums_wanted = bool(EVENT_METRICS & set(query.metrics))
    views_only = "events" not in query.metrics  # page views alone: 1/5 of the rows
    if _page_plan_fits(query, dimensions, keep):
        return _page_plan(site, period, query, dimensions, keep)
    if not needs_visits and _slot_fits(period, dimensions, filters, keep):
        sums = _slot_sums(site, period, dimensions, filters, keep, False).cte("selected")
        return _Plan([sums], sums, False)
    scope = (Event.site_id == site.id) & period.covers(Event.occurred_at)
    visit_columns = _visit_needs(query, dimensions)
    built, visits = visits_cte(site, period, visit_columns) if needs_visits else ([], None)
    visit_row = Row(None, visits.c, period) if visits is not None else None
    visit_condition = None if visits is None else compile_filters(
        filters, visit_row, lambda leaf: keep(leaf) and leaf.dimension.kind == "visit")
    if visits is not None and not event_keys and not event_filtered and (
            not event_sums_wanted or (not dimensions and visit_condition is None)):
        # The rows are visits: the visit table alone, plus, for the totals of an unfiltered
        # query that asks for events, one sum over the period's events.
        selected = Select([visits], [
            *[d.sql(visit_row).alias(key) for key, d in zip(keys, dimensions, strict=True)],
            is_sampled(visits.c.w).alias("sampled"), *_visit_figures(visits, visit_columns)])
        if visit_condition is not None:
            selected = selected.where(visit_condition)
        selected = selected.cte("selected")
        ctes = [*built, visits, selected]
        event_totals = None
        if event_sums_wanted:
            if _slot_fits(period, (), (), keep):
                event_totals = _slot_sums(site, period, (), (), keep, views_only)
            else:
                event_totals = Event.select(*_event_sums()).where(
                    scope & (Event.type == "pageview") if views_only else scope)
            event_totals = event_totals.cte("event_totals")
            ctes.append(event_totals)
        return _Plan(ctes, selected, True, True, event_totals)
    mixed = any(len(kinds((node,))) > 1 for node in filters)
    event_row = Row(Event, visits.c if mixed else None, period)
    where = scope & _implied(filters, keep)
    condition = compile_filters(filters, event_row, lambda leaf: keep(leaf) and (
        mixed or leaf.dimension.kind != "visit"))
    if condition is not None:
        where &= condition
    if rows_only and any(d.name == GOAL for d in dimensions):
        # event:goal rows are the goals (named ones: the others are in no row); totals apart
        where &= (Event.type == "goal") & Event.name.is_null(False)
    if visits is not None and any(d.kind == "time" for d in dimensions):
        slots = None
        if visit_condition is None and not mixed and _slot_fits(period, dimensions, filters,
                                                                keep):
            slots = (_slot_sums(site, period, dimensions, filters, keep, views_only),
                     _slot_sums(site, period, (), filters, keep, views_only))
        return _time_plan(query, dimensions, built, visits, visit_condition, where,
                          event_filtered, mixed, period, slots)
    # Events are summed per (event dimensions, session) first, and the visits joined to those
    # sums: a visit's columns are the same on all its events. A filter node that mixes visit
    # and event dimensions (an `or` across both) needs the visit on each event instead.
    # grouped by the output names: the same expression twice would bind its parameters twice,
    # and PostgreSQL could not tell that the two are one
    group_keys = [SQL(f'"{key}"') for key, _d in event_keys]
    grouped = Event.select(*[d.sql(event_row).alias(key) for key, d in event_keys],
                           *([Event.session_id.alias("sid")] if visits is not None else []),
                           *_event_sums())
    if mixed:
        grouped = grouped.join(visits, JOIN.LEFT_OUTER,
                               on=(visits.c.session_id == Event.session_id))
    grouped = grouped.where(where).group_by(
        *group_keys, *([Event.session_id] if visits is not None else [])).cte("grouped")
    g = grouped.c
    if visits is not None and not mixed:  # only the visits of the selected events' sessions
        built, visits = visits_cte(site, period, visit_columns,
                                   sessions=Select([grouped], [g.sid]))
    columns = [getattr(g, key).alias(key) if d.kind != "visit"
               else d.sql(visit_row).alias(key)
               for key, d in zip(keys, dimensions, strict=True)]
    selected = Select([grouped], [*columns, g.events, g.stored, g.pageviews, g.sampled,
                                  *(_visit_figures(visits, visit_columns)
                                    if visits is not None else [])])
    ctes = [grouped]
    if visits is not None:
        at = 0 if mixed else 1  # the narrowed visits read `grouped`
        ctes[at:at] = [*built, visits]
        selected = selected.join(visits, JOIN.LEFT_OUTER, on=(visits.c.session_id == g.sid))
        if mixed:
            visit_condition = None
        if "visit" in kinds(filters):  # visit:* filters select visits' events only
            visit_condition = visits.c.session_id.is_null(False) & (
                visit_condition if visit_condition is not None else True)
        if visit_condition is not None:
            selected = selected.where(visit_condition)
    selected = selected.cte("selected")
    return _Plan([*ctes, selected], selected, visits is not None)


def _time_plan(query: Query, dimensions: tuple[Dimension, ...], built: list[Any], visits: Any,
               visit_condition: Any, where: Any, event_filtered: bool, mixed: bool,
               period: Period, slots: tuple[Select, Select] | None) -> _Plan:
    """With a time:* dimension and visit figures: a visit counts in the bucket of its first
    event in the period (when it has a selected event), an event in the bucket of its own
    time, so the two are summed apart: the visits per (dimension values, session), the
    events per dimension values and over everything (`slots`, the two sums, when the
    quarter-hour counts answer them)."""
    keys = [f"d{index}" for index in range(len(dimensions))]
    columns = _visit_needs(query, dimensions)
    at_start = Row(visits.c, visits.c, period)  # time:* reads the visit's start
    event_keys = [(key, d) for key, d in zip(keys, dimensions, strict=True)
                  if d.kind == "event"]
    filtering = visit_condition if not mixed else None
    if event_keys or event_filtered:
        sessions = (Event.select(*[d.sql(Row(Event, visits.c if mixed else None, period))
                                   .alias(key) for key, d in event_keys],
                                 Event.session_id.alias("sid")))
        if mixed:
            sessions = sessions.join(visits, JOIN.LEFT_OUTER,
                                     on=(visits.c.session_id == Event.session_id))
        sessions = (sessions.where(where)
                    .group_by(*[SQL(f'"{key}"') for key, _d in event_keys], Event.session_id)
                    .cte("sessions"))
        source = Select([sessions], [
            getattr(sessions.c, key).alias(key) if d.kind == "event"
            else d.sql(at_start).alias(key) for key, d in zip(keys, dimensions, strict=True)]
            + [is_sampled(visits.c.w).alias("sampled"), *_visit_figures(visits, columns)]).join(
            visits, on=(visits.c.session_id == sessions.c.sid))
        ctes = [*built, visits, sessions]
    else:
        source = Select([visits], [*[d.sql(at_start).alias(key) for key, d
                                     in zip(keys, dimensions, strict=True)],
                                   is_sampled(visits.c.w).alias("sampled"),
                                   *_visit_figures(visits, columns)])
        ctes = [*built, visits]
    selected = (source.where(filtering) if filtering is not None else source).cte("selected")
    ctes.append(selected)
    if not EVENT_METRICS & set(query.metrics):
        return _Plan(ctes, selected, True, True)
    if slots is None:
        # visit:* dimensions and filters: the events of the counted visits only
        joined = any(d.kind == "visit" for d in dimensions) or visit_condition is not None
        at_event = Row(Event, visits.c if joined or mixed else None, period)
        condition = where if filtering is None else where & filtering
        if "events" not in query.metrics:  # page views alone: an index range, 1/5 of rows
            condition &= Event.type == "pageview"

        def events_by(names: list[str]) -> Select:
            found = Event.select(*[d.sql(at_event).alias(key) for key, d
                                   in zip(keys, dimensions, strict=True) if key in names],
                                 *_event_sums())
            if joined or mixed:
                found = found.join(visits, JOIN.INNER if joined and not mixed
                                   else JOIN.LEFT_OUTER,
                                   on=(visits.c.session_id == Event.session_id))
            return found.where(condition).group_by(*[SQL(f'"{key}"') for key in names])

        slots = (events_by(keys), events_by([]))
    event_rows, event_totals = slots[0].cte("event_rows"), slots[1].cte("event_totals")
    ctes += [event_rows, event_totals]
    return _Plan(ctes, selected, True, True, event_totals, event_rows)


# The sums each metric reads (_figures); the others are left at 0.
NEEDS = {"visitors": {"visitors"}, "percentage": {"visitors"}, "visits": {"visits"},
         "bounce_rate": {"visits", "bounces"}, "views_per_visit": {"visits", "views"},
         "visit_duration": {"visits", "duration"}, "conversion_rate": {"visits"},
         "pageviews": {"pageviews"}, "events": {"events", "stored"}}


def _statement(site: Site, period: Period, query: Query, dimensions: tuple[Dimension, ...],
               filters_keep: Any = None, rows_only: bool = False) -> Select:
    """Per row of `dimensions` (and, unless `rows_only`, over everything: the totals): the
    SUMS the metrics need, `sampled` and `total_rows`.

    `selected` has one row per (dimension values, session): a visit's figures are on each of
    its rows once. Visitors need one aggregate per (row, visitor) first, for the visitor's
    weight, summed per row by a second; the other sums need one aggregate per row. When the
    rows are the visits, PostgreSQL computes rows and totals in one pass (GROUPING SETS);
    otherwise, and on SQLite (which has none), they are two aggregates over the same rows."""
    keep = filters_keep or (lambda _leaf: True)
    plan = _plan(site, period, query, dimensions, keep, rows_only)
    keys = [f"d{index}" for index in range(len(dimensions))]
    needed = set().union(*(NEEDS[name] for name in query.metrics))
    ctes = list(plan.ctes)
    selected = plan.selected
    s = selected.c
    by_visitor = plan.has_visits and "visitors" in needed
    in_visit = s.vid.is_null(False) if plan.has_visits else None
    sums = {} if plan.visit_rows else {name: fn.SUM(getattr(s, name)) for name in
                                       ("events", "stored", "pageviews") if name in needed}
    if plan.has_visits:
        for name, value in (("visits", s.vw), ("bounces", s.bounced * s.vw),
                            ("views", s.vpv * s.vw), ("duration", s.vdur * s.vw)):
            if name in needed:
                sums[name] = fn.SUM(Case(None, [(in_visit, value)], 0))
    if by_visitor:
        sums["w"] = fn.MAX(Case(None, [(in_visit, s.vw)]))

    def goals_only(source: Any) -> Any:
        """event:goal rows are the goals: no row for the events that are not one."""
        condition: Any = True
        for key, d in zip(keys, dimensions, strict=True):
            if d.name == GOAL:
                condition &= getattr(source.c, key).is_null(False)
        return condition

    row_keys = [getattr(s, key) for key in keys]
    visitor = [s.visitor] if by_visitor else []

    def aggregate_of(grand: Any, columns: list[Any]) -> Select:
        return Select([selected], [grand.alias("grand"), *columns, *visitor,
                                   *[total.alias(name) for name, total in sums.items()],
                                   fn.MAX(s.sampled).alias("sampled")])

    def first(grand: int) -> Select:
        """The first aggregate of `selected`, per row (grand 0) or over everything (1)."""
        if grand == 1:
            found = aggregate_of(Value(1), [Value(None).alias(key) for key in keys])
            return found.group_by(*visitor) if visitor else found
        where = goals_only(selected)
        if any(d.kind == "visit" for d in dimensions):  # events outside visits: no row
            where &= in_visit
        return aggregate_of(Value(0), row_keys).where(where).group_by(*row_keys, *visitor)

    def first_in_one_pass() -> Select:
        """Both levels at once: the rows are visits, every one in a row (PostgreSQL)."""
        sets = EnclosedNodeList([EnclosedNodeList([*row_keys, *visitor]),
                                 EnclosedNodeList(visitor)])
        return aggregate_of(fn.GROUPING(row_keys[0]), row_keys).group_by(
            NodeList((SQL("GROUPING SETS"), sets)))

    grands = [0] if rows_only else [0, 1] if keys else [1]
    if len(grands) == 2 and plan.visit_rows and is_postgres():
        aggregate = first_in_one_pass()
    else:
        aggregate = first(grands[0])
        for grand in grands[1:]:
            aggregate += first(grand)
    aggregate = aggregate.cte("first")
    ctes.append(aggregate)
    a = aggregate.c

    def part(source: Any, totals: dict[str, Any], sampled: Any, where: Any = True,
             grand: Any = None) -> Select:
        c = source.c
        columns = [getattr(c, key) for key in keys]
        return Select([source], [
            (c.grand if grand is None else Value(grand)).alias("grand"),
            *(columns if grand != 1 else [Value(None).alias(key) for key in keys]),
            *[totals.get(name, Value(0)).alias(name) for name in SUMS],
            sampled.alias("sampled")]).where(where)

    if by_visitor:  # per row, the visitors' sums
        parts = part(aggregate, {
            **{name: fn.SUM(getattr(a, name)) for name in sums if name != "w"},
            "visitors": fn.SUM(Case(None, [(a.visitor.is_null(False), a.w)], 0))},
            fn.MAX(a.sampled)).group_by(a.grand, *[getattr(a, key) for key in keys])
    else:
        parts = part(aggregate, {name: getattr(a, name) for name in sums}, a.sampled)
    if 1 in grands and plan.event_totals is not None:
        t = plan.event_totals.c
        parts += part(plan.event_totals, {"events": t.events, "stored": t.stored,
                                          "pageviews": t.pageviews}, t.sampled, grand=1)
    if 0 in grands and plan.event_rows is not None:
        r = plan.event_rows.c
        parts += part(plan.event_rows, {"events": fn.SUM(r.events), "stored": fn.SUM(r.stored),
                                        "pageviews": fn.SUM(r.pageviews)}, fn.MAX(r.sampled),
                      goals_only(plan.event_rows), grand=0).group_by(
            *[getattr(r, key) for key in keys])
    combined = parts.cte("parts")
    ctes.append(combined)
    c = combined.c
    groups = [c.grand, *[getattr(c, key) for key in keys]]
    final = (Select([combined], [c.grand, *[getattr(c, key).alias(key) for key in keys],
                                 *[fn.SUM(getattr(c, name)).alias(name) for name in SUMS],
                                 fn.MAX(c.sampled).alias("sampled"),
                                 fn.COUNT(SQL("*")).over(partition_by=[c.grand])
                                 .alias("total_rows")])
             .group_by(*groups)
             .order_by(c.grand.desc(), fn.SUM(c.events).desc(), fn.SUM(c.visits).desc())
             .limit(ROW_CAP + 1))
    return final.with_cte(*ctes)


def _figure_rows(site: Site, period: Period, query: Query, dimensions: tuple[Dimension, ...],
                 filters_keep: Any = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(rows by the dimensions, the totals row). With an event dimension the totals are a
    statement of their own (a visit may be in several rows), which without event filters
    reads only the visit table. Rows by visit and time dimensions (a visit is in one row:
    its first event's bucket) and their totals can come from one statement: they do where
    the two cannot run at once (base.concurrently); where they can, two take half the time
    (sources at 10 M: ~420 ms against ~600) for a quarter more CPU."""
    if dimensions and (any(d.kind == "event" for d in dimensions)  # a visit in several rows
                       or can_run_concurrently()):  # two statements, two cores
        rows, totals = concurrently(
            lambda: _fetched(_statement(site, period, query, dimensions, filters_keep, True)),
            lambda: _fetched(_statement(site, period, query, (), filters_keep)))
        found = rows + totals
    else:
        found = _fetched(_statement(site, period, query, dimensions, filters_keep))
    totals = [row for row in found if row["grand"] == 1]
    rows = [{**row, **{f"d{index}": bucket_text(d, row[f"d{index}"])
                       for index, d in enumerate(dimensions)}}
            for row in found if row["grand"] == 0]
    return rows, totals[0] if totals else NOTHING


NOTHING = {"grand": 1, **dict.fromkeys(SUMS, 0), "sampled": 0, "total_rows": 0}  # no rows


def _fetched(statement: Select) -> list[dict[str, Any]]:
    """The statement's rows, read once per tool call: a conversion rate's denominator is often
    the totals statement again."""
    sql, params = statement.bind(database).sql()
    return memoized(("statement", sql, tuple(params)), lambda: fetch(statement))


# --- Figures -------------------------------------------------------------------------------

def _ratio(part: float, whole: float, scale: float, digits: int) -> float | None:
    return round(part / whole * scale, digits) if whole else None


def _figures(sums: dict[str, Any]) -> dict[str, Any]:
    """The metrics of one row from its sums (percentage and conversion_rate added later)."""
    s = {name: float(sums.get(name) or 0) for name in SUMS}
    duration = _ratio(s["duration"], s["visits"], 1, 0)
    return {"visitors": round(s["visitors"]), "visits": round(s["visits"]),
            "pageviews": round(s["pageviews"]), "events": round(s["events"]),
            "stored": round(s["stored"]),
            "bounce_rate": _ratio(s["bounces"], s["visits"], 100, 1),
            "views_per_visit": _ratio(s["views"], s["visits"], 1, 2),
            "visit_duration": None if duration is None else int(duration),
            "_visits": s["visits"], "_visitors": s["visitors"]}


@dataclass(frozen=True)
class Figures:
    rows: list[dict[str, Any]]  # {"key": tuple, **metric values}
    totals: dict[str, Any]
    total_rows: int
    estimated: bool
    capped: bool


def _keyed(rows: list[dict[str, Any]], count: int) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {tuple(row[f"d{index}"] for index in range(count)): row for row in rows}


def read_figures(site: Site, period: Period, query: Query) -> Figures:
    """The figures of `query`, rows in the query's order (for the kept tools it subsumes)."""
    figures = _read(site, period, query)
    return replace(figures, rows=_ordered(query, figures.rows))


def _read(site: Site, period: Period, query: Query) -> Figures:
    dims = query.dimensions
    found, total = _figure_rows(site, period, query, dims)
    if not dims:
        found = [total]
    rows = [{"key": key, **_figures(row)} for key, row in _keyed(found, len(dims)).items()]
    totals = _figures(total)
    estimated = bool(total["sampled"])
    total_rows = int(found[0]["total_rows"]) if found else 0
    if "conversion_rate" in query.metrics:
        _conversion(site, period, query, rows, totals)
    if "percentage" in query.metrics:
        for row in rows:
            row["percentage"] = _ratio(row["_visitors"], totals["_visitors"], 100, 1)
    totals["percentage"] = None
    return Figures(rows, totals, total_rows, estimated, total_rows > len(rows))


def _conversion(site: Site, period: Period, query: Query, rows: list[dict[str, Any]],
                totals: dict[str, Any]) -> None:
    """conversion_rate: the row's visits over the visits counted without the goal condition
    (the event:goal dimension, or the `is` filter on it)."""
    names = [d.name for d in query.dimensions]
    if GOAL in names:
        at = names.index(GOAL)
        others = tuple(d for d in query.dimensions if d.name != GOAL)
        base, whole = _figure_rows(site, period, query, others)
        bases = _keyed(base if others else [whole], len(others))
        for row in rows:
            rest = row["key"][:at] + row["key"][at + 1:]
            row["conversion_rate"] = _ratio(row["_visits"],
                                            float(bases.get(rest, {}).get("visits") or 0), 100, 1)
        totals["conversion_rate"] = None
        return
    leaf = goal_leaf(query.filters)

    def keep(candidate: Leaf) -> bool:
        return candidate is not leaf

    base, whole = _figure_rows(site, period, query, query.dimensions, keep)
    bases = _keyed(base if query.dimensions else [whole], len(query.dimensions))
    for row in rows:
        row["conversion_rate"] = _ratio(row["_visits"],
                                        float(bases.get(row["key"], {}).get("visits") or 0),
                                        100, 1)
    totals["conversion_rate"] = _ratio(totals["_visits"], float(whole["visits"] or 0), 100, 1)


def _sort_key(value: Any, descending: bool) -> tuple[bool, Any]:
    """Nulls last in either direction."""
    if value is None:
        return (not descending, "")
    return (descending, value)


def _ordered(query: Query, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    names = [d.name for d in query.dimensions]
    order = list(query.order_by) or (
        [(name, "asc") for name in names if name.startswith("time:")]
        or [(query.metrics[0], "desc")])
    for name in names:  # ties in dimension order, deterministic
        if name not in [n for n, _ in order]:
            order.append((name, "asc"))
    for name, direction in reversed(order):
        if name in names:
            index = names.index(name)
            value = lambda row, i=index: row["key"][i]  # noqa: E731
        else:
            value = lambda row, n=name: row[n]  # noqa: E731
        descending = direction == "desc"
        rows.sort(key=lambda row, v=value, d=descending: _sort_key(v(row), d),
                  reverse=descending)
    return rows


def _change(name: str, current: Any, before: Any) -> float | None:
    if current is None or before is None:
        return None
    if name in RATES:
        return round(current - before, 1)
    return round((current - before) / before * 100, 1) if before else None


def _shift(value: Any, name: str, days: int, months: int) -> Any:
    """A comparison period's time bucket moved onto the queried period's, so rows match."""
    if value is None or not name.startswith("time:"):
        return value
    if name == "time:month":
        year, month = map(int, value.split("-"))
        index = year * 12 + month - 1 + months
        return f"{index // 12:04d}-{index % 12 + 1:02d}"
    moved = date.fromisoformat(value[:10]) + timedelta(days=days)
    if name == "time:week":
        moved -= timedelta(days=moved.weekday())
    return moved.isoformat() + value[10:]


def run_query(site: Site, period: Period, query: Query) -> dict[str, Any]:
    """The `query` tool's result (without site/from/to/timezone, which the tool adds)."""
    other = compare_period(period, query.compare) if query.compare is not None else None
    if other is None:
        main, before = _read(site, period, query), None
    else:  # the two periods at once
        main, before = concurrently(lambda: _read(site, period, query),
                                    lambda: _read(site, other, query))
    ordered = _ordered(query, main.rows)
    page = ordered[query.offset:query.offset + query.limit]
    results = [{"dimensions": list(row["key"]),
                 "metrics": [row[name] for name in query.metrics]} for row in page]
    warnings = []
    if main.capped:
        warnings.append(f"Only the {ROW_CAP:,} rows with the most events were ranked; narrow "
                        "the query (filters, fewer dimensions) for the rest.")
    answer: dict[str, Any] = {
        "metrics": list(query.metrics), "dimensions": [d.name for d in query.dimensions],
        "results": results, "totals": [main.totals.get(name) for name in query.metrics],
        "total_rows": main.total_rows, "estimated": main.estimated, "warnings": warnings}
    if other is None or before is None:
        return answer
    days = (period.first - other.first).days
    months = (period.first.year - other.first.year) * 12 + period.first.month \
        - other.first.month
    names = [d.name for d in query.dimensions]
    earlier = {tuple(_shift(value, name, days, months) for value, name in
                     zip(row["key"], names, strict=True)): row for row in before.rows}
    for result, row in zip(results, page, strict=True):
        then = earlier.get(row["key"], {})
        values = [then.get(name, 0 if name not in RATES | {"views_per_visit",
                                                            "visit_duration", "percentage"}
                           else None) for name in query.metrics]
        result["comparison"] = {"metrics": values, "change": [
            _change(name, now, was) for name, now, was in
            zip(query.metrics, result["metrics"], values, strict=True)]}
    answer["comparison"] = {"from": other.first.isoformat(), "to": other.last.isoformat(),
                            "totals": [before.totals.get(name) for name in query.metrics]}
    answer["estimated"] = main.estimated or before.estimated
    return answer

