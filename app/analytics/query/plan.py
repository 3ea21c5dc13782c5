"""Choosing what a statement reads (a `Plan`): the visit pages or the quarter hours when they
answer (rollup_plans), the visits alone when the rows are visits, the events otherwise, summed
per (event dimensions, session) and joined to their visits (time:* rows: time_plan).

Filters on visit:* select visits (and their events); filters on event:* select events, and a
visit counts when it has a selected event. Every event read is of `events.event_scope`.
"""
from typing import Any

from peewee import JOIN, Select

from app.analytics.events import event_scope, is_sampled
from app.analytics.filters import Filters, Leaf, bind_site, compile_filters, kinds, leaves
from app.analytics.period import Period
from app.analytics.period_rows import visits_cte
from app.analytics.query.arguments import GOAL, Query
from app.analytics.query.plan_shape import (
    EVENT_METRICS,
    VISIT_METRICS,
    Plan,
    event_sums,
    grouped_by,
    keys_of,
    selected_visit_values,
    visit_columns,
    visit_needs,
)
from app.analytics.query.rollup_plans import page_plan, page_plan_fits, slot_fits, slot_sums
from app.analytics.query.time_plan import time_plan
from app.analytics.vocabulary import Dimension, Row
from models import Event, Site
from models.event import EVENT_TYPES


def matching_sessions(site: Site, period: Period, filters: Filters) -> Select:
    """The session ids of the visits of `period` whose visit:* values satisfy `filters`
    (visit filters only, as parse_filters(..., visit_only=True) gives)."""
    filters = bind_site(filters, site.id)
    built, visits = visits_cte(site, period, visit_columns((), filters), "filtered_visits")
    condition = compile_filters(filters, Row(None, visits.c, period))
    query = Select([visits], [visits.c.session_id]).with_cte(*built, visits)
    return query.where(condition) if condition is not None else query


def _implied(filters: Filters, keep: Any) -> Any:
    """What the top-level `is` filters (and `is_not` null) on an event's name or goal imply of
    its type and name, spelled so that the index of named events (site, type, name, time)
    serves them: a name is one of the types' (each a range of the index), a goal is a named
    event of type goal."""
    implied: Any = True
    for node in filters:
        if not (isinstance(node, Leaf) and keep(node) and (
                (node.op == "is" and None not in node.values)
                or (node.op == "is_not" and node.values == (None,)))):  # figures.split_scope
            continue
        if node.dimension.name == "event:name":
            implied &= Event.type.in_(EVENT_TYPES) & Event.name.is_null(False)
        elif node.dimension.name == GOAL:
            implied &= (Event.type == "goal") & Event.name.is_null(False)
    return implied


def _visit_rows(site: Site, period: Period, query: Query, dimensions: tuple[Dimension, ...],
                keep: Any, built: list[Any], visits: Any, visit_condition: Any) -> Plan:
    """The rows are visits: the visit table alone, plus, for the totals of an unfiltered
    query that asks for events, one sum over the period's events."""
    columns = visit_needs(query.metrics, dimensions, query.filters)
    row = Row(None, visits.c, period)
    selected = Select([visits], [
        *[d.sql(row).alias(key) for key, d in zip(keys_of(dimensions), dimensions, strict=True)],
        is_sampled(visits.c.w).alias("sampled"), *selected_visit_values(visits, columns)])
    if visit_condition is not None:
        selected = selected.where(visit_condition)
    selected = selected.cte("selected")
    ctes = [*built, visits, selected]
    event_totals = None
    if EVENT_METRICS & set(query.metrics):
        views_only = "events" not in query.metrics  # page views alone: 1/5 of the rows
        if slot_fits(period, (), (), keep):
            event_totals = slot_sums(site, period, (), (), keep, views_only)
        else:
            scope = event_scope(site.id, period)
            event_totals = Event.select(*event_sums()).where(
                scope & (Event.type == "pageview") if views_only else scope)
        event_totals = event_totals.cte("event_totals")
        ctes.append(event_totals)
    return Plan(ctes, selected, True, True, event_totals)


def choose_plan(site: Site, period: Period, query: Query, dimensions: tuple[Dimension, ...],
                keep: Any, rows_only: bool) -> Plan:
    """The plan of one statement: rows by `dimensions` (and their totals unless `rows_only`),
    the filter leaves for which `keep` is false left out."""
    filters = query.filters
    keys = keys_of(dimensions)
    needs_visits = bool(VISIT_METRICS & set(query.metrics)) or "visit" in kinds(filters) \
        or any(d.kind == "visit" for d in dimensions)
    event_keys = [(key, d) for key, d in zip(keys, dimensions, strict=True)
                  if d.kind != "visit"]
    event_filtered = any(keep(leaf) and leaf.dimension.kind != "visit"
                         for leaf in leaves(filters))
    event_sums_wanted = bool(EVENT_METRICS & set(query.metrics))
    if page_plan_fits(query, period, dimensions, keep):
        return page_plan(site, period, query, dimensions, keep)
    if not needs_visits and slot_fits(period, dimensions, filters, keep):
        sums = slot_sums(site, period, dimensions, filters, keep, False).cte("selected")
        return Plan([sums], sums, False)
    columns = visit_needs(query.metrics, dimensions, filters)
    built, visits = visits_cte(site, period, columns) if needs_visits else ([], None)
    visit_row = Row(None, visits.c, period) if visits is not None else None
    visit_condition = None if visits is None else compile_filters(
        filters, visit_row, lambda leaf: keep(leaf) and leaf.dimension.kind == "visit")
    if visits is not None and not event_keys and not event_filtered and (
            not event_sums_wanted or (not dimensions and visit_condition is None)):
        return _visit_rows(site, period, query, dimensions, keep, built, visits,
                           visit_condition)
    mixed = any(len(kinds((node,))) > 1 for node in filters)
    event_row = Row(Event, visits.c if mixed else None, period)
    where = event_scope(site.id, period) & _implied(filters, keep)
    condition = compile_filters(filters, event_row, lambda leaf: keep(leaf) and (
        mixed or leaf.dimension.kind != "visit"))
    if condition is not None:
        where &= condition
    if rows_only and any(d.name == GOAL for d in dimensions):
        # event:goal rows are the goals (named ones: the others are in no row); totals apart
        where &= (Event.type == "goal") & Event.name.is_null(False)
    if visits is not None and any(d.kind == "time" for d in dimensions):
        slots = None
        if visit_condition is None and not mixed and slot_fits(period, dimensions, filters,
                                                               keep):
            views_only = "events" not in query.metrics
            slots = (slot_sums(site, period, dimensions, filters, keep, views_only),
                     slot_sums(site, period, (), filters, keep, views_only))
        return time_plan(query, dimensions, built, visits, visit_condition, where,
                         event_filtered, mixed, period, slots)
    return _event_rows(site, period, query, dimensions, event_keys, built, visits,
                       visit_condition, where, mixed)


def _event_rows(site: Site, period: Period, query: Query, dimensions: tuple[Dimension, ...],
                event_keys: list[tuple[str, Dimension]], built: list[Any], visits: Any,
                visit_condition: Any, where: Any, mixed: bool) -> Plan:
    """Events summed per (event dimensions, session) first, and the visits joined to those
    sums: a visit's columns are the same on all its events. A filter node that mixes visit
    and event dimensions (an `or` across both) needs the visit on each event instead."""
    keys = keys_of(dimensions)
    columns = visit_needs(query.metrics, dimensions, query.filters)
    event_row = Row(Event, visits.c if mixed else None, period)
    grouped = Event.select(*[d.sql(event_row).alias(key) for key, d in event_keys],
                           *([Event.session_id.alias("sid")] if visits is not None else []),
                           *event_sums())
    if mixed:
        grouped = grouped.join(visits, JOIN.LEFT_OUTER,
                               on=(visits.c.session_id == Event.session_id))
    grouped = grouped.where(where).group_by(
        *grouped_by([key for key, _d in event_keys]),
        *([Event.session_id] if visits is not None else [])).cte("grouped")
    g = grouped.c
    if visits is not None and not mixed:  # only the visits of the selected events' sessions
        built, visits = visits_cte(site, period, columns, sessions=Select([grouped], [g.sid]))
    visit_row = Row(None, visits.c, period) if visits is not None else None
    values = [getattr(g, key).alias(key) if d.kind != "visit" else d.sql(visit_row).alias(key)
              for key, d in zip(keys, dimensions, strict=True)]
    selected = Select([grouped], [*values, g.events, g.pageviews, g.sampled,
                                  *(selected_visit_values(visits, columns) if visits is not None
                                    else [])])
    ctes = [grouped]
    if visits is not None:
        at = 0 if mixed else 1  # the narrowed visits read `grouped`
        ctes[at:at] = [*built, visits]
        selected = selected.join(visits, JOIN.LEFT_OUTER, on=(visits.c.session_id == g.sid))
        if mixed:
            visit_condition = None
        # (a condition on the first visits CTE reads the narrowed one: both are `visits`)
        if "visit" in kinds(query.filters):  # visit:* filters select visits' events only
            visit_condition = visits.c.session_id.is_null(False) & (
                visit_condition if visit_condition is not None else True)
        if visit_condition is not None:
            selected = selected.where(visit_condition)
    selected = selected.cte("selected")
    return Plan([*ctes, selected], selected, visits is not None)
