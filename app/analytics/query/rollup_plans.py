"""The plans that read a rollup alone instead of the events: the pages of the visits
(models.VisitPage) for page breakdowns and filters, and the quarter-hour counts
(models.EventSlot) for event counts by time and type."""
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

from peewee import SQL, Select, Value, fn

from app.analytics.events import is_sampled, when
from app.analytics.filters import Done, Filters, Leaf, compile_filters, leaves
from app.analytics.period import Period
from app.analytics.period_rows import pages_cte, slot_rows, slots_cover
from app.analytics.query.arguments import PAGE, TYPE, Query
from app.analytics.query.plan_shape import Plan
from app.analytics.vocabulary import VISIT_FIGURES, Dimension, Row
from models import EventSlot, Site
from models.visit_page import NO_PAGE

# what one row per (visit, page) answers (app.analytics.period_rows.pages_cte)
PAGE_METRICS = frozenset({"visitors", "visits", "pageviews", "events", "percentage"})


def is_pageviews(node: Any) -> bool:
    """`["is", "event:type", ["pageview"]]`: the page views alone."""
    return isinstance(node, Leaf) and node.dimension.name == TYPE and node.op == "is" \
        and node.values == ("pageview",)


def page_plan_fits(query: Query, period: Period, dimensions: tuple[Dimension, ...],
                   keep: Any) -> bool:
    """Whether one row per (visit, page) answers the query: event:page as its dimension or
    filter and nothing else (but a top-level page-views-only filter, and has_done, which
    selects visits by their session id), and metrics that need no more of the visit than
    whether it is one, its visitor and its weight; not over a rolling window, whose visits are
    those with any event in it."""
    kept = [node for node in query.filters
            if not is_pageviews(node) and any(keep(leaf) for leaf in leaves((node,)))]
    on_pages = all(isinstance(leaf, Done) or leaf.dimension.name == PAGE
                   for leaf in leaves(tuple(kept)))
    return (set(query.metrics) <= PAGE_METRICS and on_pages and not period.rolling
            and all(d.name == PAGE for d in dimensions) and bool(dimensions or kept))


def page_plan(site: Site, period: Period, query: Query, dimensions: tuple[Dimension, ...],
              keep: Any) -> Plan:
    """The rows of the visit pages (period_rows.pages_cte): by page they are the rows
    already, one per (page, session); without a dimension, summed per session."""
    built, pages = pages_cte(site, period)
    c = pages.c
    page_row = Row(None, None, period, page=fn.NULLIF(c.page, NO_PAGE))

    def sessions(inner: Any) -> Select | None:
        """has_done on pages alone: the visits that have a page row matching it (0.03 s where
        the period's events took 0.29, SQLite 1 M)."""
        if not all(isinstance(leaf, Leaf) and leaf.dimension.name == PAGE
                   for leaf in leaves((inner,))):
            return None
        return Select([pages], [c.vid]).where(c.vid.is_null(False)
                                              & compile_filters((inner,), page_row))

    # has_done's session ids are looked up as the visits' (`vid`: a session that is no visit
    # of the period is in no has_done or has_not_done selection, as on the event plan)
    row = replace(page_row, visit=SimpleNamespace(session_id=c.vid), sessions=sessions)
    views_only = any(is_pageviews(node) and keep(node) for node in query.filters)
    filters = tuple(node for node in query.filters if not is_pageviews(node))
    where = compile_filters(filters, row, keep)
    if where is not None:
        # the same on the column itself where it holds a page, so that the planner estimates
        # it from the column's statistics (a regular expression on NULLIF(page, '') it takes
        # for 1 row in 200: 3,000 rows for 148,000, sorted where they would be hashed)
        where = ((c.page != NO_PAGE) & compile_filters(filters, replace(row, page=c.page), keep)
                 | (c.page == NO_PAGE) & where)
    if views_only:  # the page views alone: a visit counts where it viewed the page
        where = (c.views > 0) if where is None else where & (c.views > 0)
    events = c.pageviews if views_only else c.events
    # no bounce, views per visit or duration here (PAGE_METRICS)
    unread = [Value(0).alias(figure.selected) for figure in VISIT_FIGURES]
    if dimensions:
        selected = Select([pages], [dimensions[0].sql(row).alias("d0"), events.alias("events"),
                                    c.pageviews, c.sampled, c.vid, c.visitor,
                                    c.w.alias("vw"), *unread])
    else:  # a session's visit figures are the same on each of its pages
        selected = Select([pages], [
            fn.SUM(events).alias("events"), fn.SUM(c.pageviews).alias("pageviews"),
            fn.MAX(c.sampled).alias("sampled"), fn.MAX(c.vid).alias("vid"),
            fn.MAX(c.visitor).alias("visitor"), fn.MAX(c.w).alias("vw"), *unread]
        ).group_by(c.sid)
    if where is not None:
        selected = selected.where(where)
    selected = selected.cte("selected")
    return Plan([*built, pages, selected], selected, True)


def slot_fits(period: Period, dimensions: tuple[Dimension, ...], filters: Filters,
              keep: Any) -> bool:
    """Whether the quarter-hour counts (models.EventSlot) answer the events' sums: time:*
    and event:type alone, over a period of whole quarter hours."""
    return (all(d.kind == "time" or d.name == TYPE for d in dimensions)
            and all(leaf.dimension.name == TYPE for leaf in leaves(filters) if keep(leaf))
            and slots_cover(period))


def slot_sums(site: Site, period: Period, dimensions: tuple[Dimension, ...],
              filters: Filters, keep: Any, views_only: bool) -> Select:
    """The events' sums per row of `dimensions` from the quarter-hour counts (slot_fits)."""
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
        fn.SUM(EventSlot.weight).alias("events"),
        fn.SUM(when(EventSlot.type == "pageview", EventSlot.weight)).alias("pageviews"),
        fn.MAX(is_sampled(EventSlot.top_weight)).alias("sampled"))
        .where(where).group_by(*[SQL(f'"{key}"') for key in keys]))
