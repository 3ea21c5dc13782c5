"""The rows the `query` compiler reads for a period, as docs/AGENTS.md defines them, from the
rollups (app.rollups) instead of the events where they can answer:

- visits (models.Visit): one row per visit of the period (`visits_cte`);
- visit pages (models.VisitPage): one row per (visit, page) of the period (`pages_cte`);
- quarter hours (models.EventSlot): events per quarter hour and type (`slot_rows`).

A kept row covers a session's events whatever their time; the few sessions that cross the
period's first or last instant (`Edges`) are derived from their events in the period instead,
and enter the statement as VALUES lists: inlined as subqueries, those derivations nested too
deep for SQLite's parser inside a funnel's statement.
"""
import operator
from dataclasses import dataclass
from datetime import datetime
from functools import reduce
from typing import Any

from peewee import JOIN, SQL, BooleanField, Case, Cast, Select, Value, ValuesList, fn

from app.analytics.events import event_scope, fetch, is_sampled, when
from app.analytics.local_time import offset_changes
from app.analytics.period import Period
from app.analytics.reading import memoized
from app.analytics.vocabulary import VISIT_FIGURES, visit_figure_sql
from app.rollups import event_slots, visit_pages, visits
from app.storage.dialect import firsts as first_rows
from app.storage.dialect import wide
from models import Event, EventSlot, Site, Visit, VisitPage

# what a visits CTE may compute rather than read
FIGURES = ("occurred_at", *(figure.column for figure in VISIT_FIGURES))
VISITOR_TYPE = "visitor_type"  # visit:visitor_type's column, derived (`typed_visits`)


def _visit_values(source: Any, columns: set[str]) -> list[Any]:
    """A visits CTE's columns, from the visit table or rows derived like it (`source`): the
    session, visitor and weight `w`, and of `columns` the FIGURES and the table's own. Only
    those asked for: PostgreSQL computes every column of a UNION's branches, used or not."""
    figures = visit_figure_sql(source)  # occurred_at: named as the event's time
    return [source.session_id, source.visitor, wide(source.weight).alias("w"),
            *[(figures[column] if column in figures else getattr(source, column)).alias(column)
              for column in sorted(columns)]]


@dataclass(frozen=True)
class Edges:
    """The sessions of a period that cross its first or last instant (a handful), as their
    events in the period make them: their visit rows (app.rollups.visits.derived; without a
    page view in the period a session is no visit there) and the condition on Event that reads
    those events."""

    visits: tuple[dict[str, Any], ...] = ()
    events: Any = None

    @property
    def sessions(self) -> list[str]:
        return [row["session_id"] for row in self.visits]


def edges(site: Site, period: Period) -> Edges:
    """The period's Edges, found once per tool call (reading.memoized)."""
    return memoized(("edges", site.id, period), lambda: _edges(site, period))


def _crossing(site: Site, instant: datetime) -> list[tuple[str, datetime, datetime]]:
    """(session, start, end) of the visits that began before `instant` and ended at or after
    it: those that began within LONG_VISIT before it (an index range of the visits of a day),
    and the long ones (the small partial index visit_long)."""
    across = (Visit.site_id == site.id) & (Visit.started_at < instant) & (
        Visit.ended_at >= instant)
    columns = (Visit.session_id, Visit.started_at, Visit.ended_at)
    recent = Visit.select(*columns).where(
        across & (Visit.started_at >= instant - visits.LONG_VISIT))
    long = Visit.select(*columns).where(across & visits.long_visit())
    return list((recent | long).tuples())


def _edges(site: Site, period: Period) -> Edges:
    """Their events in the period lie after its start and before the last early visit's end,
    or after the first late visit's start: two index ranges, each written with one lower and
    one upper bound. Written as the period's bounds and a tighter one beside them, SQLite
    ranged the index by the period's end and tested the whole period: hundreds of thousands
    of index entries read for a handful of events (measured: bench/README.md, "Analytics: the
    agent read surface")."""
    crossing = [*_crossing(site, period.start), *_crossing(site, period.end)]
    if not crossing:
        return Edges()
    early = [ended for _, started, ended in crossing if started < period.start]
    late = [started for _, started, ended in crossing if ended >= period.end]
    windows = []
    if early:
        last = max(early)
        windows.append(period.covers(Event.occurred_at) if last >= period.end else
                       (Event.occurred_at >= period.start) & (Event.occurred_at <= last))
    if late:
        first = max(min(late), period.start)
        windows.append((Event.occurred_at >= first) & (Event.occurred_at < period.end))
    window = reduce(operator.or_, [(Event.site_id == site.id) & each for each in windows])
    events = window & Event.session_id.in_(sorted({session for session, *_ in crossing}))
    return Edges(tuple(fetch(visits.derived(events))), events)


def visits_cte(site: Site, period: Period, columns: set[str], name: str = "visits",
               sessions: Any = None) -> tuple[list[Any], Any]:
    """(the CTEs it needs, the CTE) of one row per visit of `period` (`_visits`), with
    `visitor_type` when `columns` ask for it (`typed_visits`)."""
    if VISITOR_TYPE not in columns:
        return _visits(site, period, columns, name, sessions)
    rest = columns - {VISITOR_TYPE}
    built, base = _visits(site, period, rest, f"{name}_base", sessions)
    return typed_visits(site, built, base, ["session_id", "visitor", "w", *sorted(rest)], name)


def typed_visits(site: Site, built: list[Any], base: Any, names: list[str], name: str
           ) -> tuple[list[Any], Any]:
    """The visits of `base` (its columns `names`) with visit:visitor_type: `new` for the first
    visit egis holds of its visitor (the visit table's earliest with a page view, ties by
    session id), in any period, and for a visit without a visitor id; else `returning`. Read
    from the visit table as it is, so an erased or pruned visit is no first visit."""
    visits_of_visitors = Visit.select(Visit.visitor, Visit.session_id).where(
        (Visit.site_id == site.id) & (Visit.pageviews > 0) & Visit.visitor.is_null(False))
    # (PostgreSQL: the index visit_first_visits, migration 0019, holds them in this order)
    ranking, firsts = first_rows(visits_of_visitors, Visit.visitor,
                                 [Visit.started_at, Visit.session_id],
                                 ["visitor", "session_id"], f"{name}_firsts")
    b, f = base.c, firsts.c
    kind = Case(None, [(b.visitor.is_null() | (f.session_id == b.session_id), "new")],
                "returning")
    typed = Select([base], [*(getattr(b, column) for column in names),
                            kind.alias(VISITOR_TYPE)]).join(
        firsts, JOIN.LEFT_OUTER, on=(f.visitor == b.visitor))
    return [*built, base, *ranking, firsts], typed.cte(name)


def inside_visits(site: Site, period: Period) -> Any:
    """The visit rows (a condition on models.Visit) of the visits whose events all lie in
    `period`: the rows a read takes as they are, beside the Edges derived from their events."""
    return ((Visit.site_id == site.id) & (Visit.started_at >= period.start)
            & (Visit.ended_at < period.end) & (Visit.pageviews > 0))


def _visits(site: Site, period: Period, columns: set[str], name: str,
            sessions: Any) -> tuple[list[Any], Any]:
    """(the CTEs it needs, the CTE) of one row per visit of `period` (a session id with a page
    view in the period): session_id, visitor, w, views, bounced, duration and the visit:*
    `columns`, all from its events in the period (its first page view in the period for the
    entry values). A visit whose events all lie in the period is its visit table row
    (models.Visit, merged after ingest). The few that cross the period's first or last instant are
    derived from their events in the period (`edges`) and enter the statement as a VALUES
    list: inlined as a subquery, that derivation nested too deep for SQLite's parser inside a
    funnel's statement. `sessions`, a subquery of session ids, narrows the table's rows to
    those: 20,000 goals' visits are looked up by their key rather than 320,000 visits
    read and joined. A rolling window's visits are `_active_visits`."""
    if period.rolling:
        return _active_visits(site, period, columns, name, sessions)
    inside = inside_visits(site, period)
    if sessions is not None:
        inside &= Visit.session_id.in_(sessions)
    whole = Visit.select(*_visit_values(Visit, columns)).where(inside)
    crossing = [row for row in edges(site, period).visits if row["pageviews"]]
    if not crossing:
        return [], whole.cte(name)
    names = [*EDGE_COLUMNS, *sorted(set(columns) - set(FIGURES))]
    derived = ValuesList([[_edge_value(column, row[column]) for column in names]
                          for row in crossing]).cte(f"{name}_edges", columns=names)
    clipped = Select([derived], _visit_values(derived.c, columns))
    return [derived], (whole + clipped).cte(name)


def _edge_value(column: str, value: Any) -> Any:
    """A crossing visit's `column` as its VALUES list holds it: a boolean column of the visit
    table (storage_free) cast to boolean, as PostgreSQL types a VALUES column of NULLs only as
    text, which the union with the visit table's rows refuses."""
    if isinstance(Visit._meta.fields.get(column), BooleanField):
        return Cast(Value(value), "boolean")
    return value


def _active_visits(site: Site, period: Period, columns: set[str], name: str,
                   sessions: Any) -> tuple[list[Any], Any]:
    """The visits of a rolling window: the sessions with any event in it (a heartbeat too: a
    reader of one page sends nothing else), each its visit table row (its visit:* values its
    first page view's, perhaps before the window) timed by its first event in the window. Only
    the sessions with a page view are visits."""
    scope = event_scope(site.id, period) & Event.session_id.is_null(False)
    if sessions is not None:
        scope &= Event.session_id.in_(sessions)
    active = (Event.select(Event.session_id.alias("sid"),
                           fn.MIN(Event.occurred_at).alias("first_at"))
              .where(scope).group_by(Event.session_id).cte(f"{name}_active"))
    values = _visit_values(Visit, columns - {"occurred_at"})
    if "occurred_at" in columns:
        values.append(active.c.first_at.alias("occurred_at"))
    rows = (Visit.select(*values).join(active, on=(Visit.session_id == active.c.sid))
            .where((Visit.site_id == site.id) & (Visit.pageviews > 0)))
    return [active], rows.cte(name)


EDGE_COLUMNS = ("session_id", "visitor", "weight", "started_at", "ended_at", "pageviews",
                "interactions")


PAGE_COLUMNS = ("page", "sid", "events", "pageviews", "views", "sampled", "visitor", "w", "vid")


def pages_cte(site: Site, period: Period, name: str = "page_rows") -> tuple[list[Any], Any]:
    """(the CTEs it needs, the CTE) of one row per (session, page) of the period's events, and
    one per page for the events without a session: PAGE_COLUMNS, the page as the `page`
    column holds it (NO_PAGE for none), the events' sums (weighted; `views`, the page views,
    unweighted) and the session's visit: its visitor, its largest weight `w`,
    and `vid`, the session id when the session is a visit of the period (has a page view in
    it), else NULL.

    A session inside the period has its page rows as kept (models.VisitPage), whose visitor and
    weight are its visit's, unless the session is irregular (the partial index
    visit_irregular: several anonymous ids or weights, or no page view): those few take them
    from their visit row. A session across an edge is derived from its events in the period
    (`edges`); the events without a session come from the event table (the partial index
    event_sessionless), as the page rows do not hold them."""
    edge = edges(site, period)
    irregular = (Visit.select(Visit.session_id, Visit.visitor, Visit.weight, Visit.pageviews)
                 .where((Visit.site_id == site.id) & (Visit.started_at >= period.start)
                        & (Visit.ended_at < period.end) & visits.irregular())
                 .cte(f"{name}_irregular"))
    i, p = irregular.c, VisitPage
    kept = i.session_id.is_null()
    inside = (p.select(p.page, p.session_id.alias("sid"), p.events_weight.alias("events"),
                       p.pageviews_weight.alias("pageviews"),
                       p.pageviews.alias("views"), is_sampled(p.weight).alias("sampled"),
                       Case(None, [(kept, p.visitor)], i.visitor).alias("visitor"),
                       wide(Case(None, [(kept, p.weight)], i.weight)).alias("w"),
                       Case(None, [(kept | (i.pageviews > 0), p.session_id)]).alias("vid"))
              .join(irregular, JOIN.LEFT_OUTER, on=(i.session_id == p.session_id))
              .where((p.site_id == site.id) & (p.started_at >= period.start)
                     & (p.ended_at < period.end)))
    ctes = [irregular]
    rows = inside
    if edge.visits:
        rows = rows.where(p.session_id.not_in(edge.sessions))
        across = ValuesList(_edge_pages(edge)).cte(f"{name}_edges", columns=PAGE_COLUMNS)
        rows += Select([across], [getattr(across.c, column) for column in PAGE_COLUMNS])
        ctes.append(across)
    page = visit_pages.page_key(Event).alias("page")
    rows += (Event.select(page, Value(None).alias("sid"),
                          fn.SUM(wide(Event.weight)).alias("events"),
                          fn.SUM(when(Event.type == "pageview", wide(Event.weight)))
                          .alias("pageviews"),
                          fn.SUM(when(Event.type == "pageview", 1)).alias("views"),
                          fn.MAX(is_sampled(Event.weight)).alias("sampled"),
                          Value(None).alias("visitor"), Value(None).alias("w"),
                          Value(None).alias("vid"))
             .where(event_scope(site.id, period) & Event.session_id.is_null())
             .group_by(SQL('"page"')))
    return ctes, rows.cte(name)


def _edge_pages(edge: Edges) -> list[list[Any]]:
    """The page rows (PAGE_COLUMNS) of the sessions across the edges, from their events in the
    period, with their visit as those events make it."""
    visit_of = {row["session_id"]: row for row in edge.visits}
    found = []
    for row in fetch(visit_pages.derived(edge.events)):
        visit = visit_of[row["session_id"]]
        found.append([row["page"], row["session_id"], row["events_weight"],
                      row["pageviews_weight"], row["pageviews"], int(row["weight"] != 1),
                      visit["visitor"], visit["weight"],
                      row["session_id"] if visit["pageviews"] else None])
    return found


def slots_cover(period: Period) -> bool:
    """Whether the period's first and last instant, and every change of its zone's offset in
    it, begin a quarter hour: then each local hour, day, week and month of it is whole
    quarter hours (models.EventSlot), in every zone in use today."""
    instants = [period.start, period.end,
                *[at for at, _ in offset_changes(period.zone, period.start, period.end)[1:]]]
    return all(event_slots.is_slot_start(instant) for instant in instants)


def slot_rows(site: Site, period: Period) -> Any:
    """The quarter-hour rows (models.EventSlot) of the period: a condition on EventSlot."""
    return (EventSlot.site_id == site.id) & (EventSlot.slot >= period.start) & (
        EventSlot.slot < period.end)


def type_sums(site: Site, period: Period) -> tuple[dict[str, float], bool]:
    """({event type: weighted count}, whether a sampled event was read) of the period's events:
    from the quarter hours when they cover the period (slots_cover), else from the events."""
    if slots_cover(period):
        rows = (EventSlot.select(EventSlot.type.alias("type"),
                                 fn.SUM(EventSlot.weight).alias("weight"),
                                 fn.MAX(is_sampled(EventSlot.top_weight)).alias("sampled"))
                .where(slot_rows(site, period)).group_by(EventSlot.type))
    else:
        rows = (Event.select(Event.type.alias("type"), fn.SUM(wide(Event.weight)).alias("weight"),
                             fn.MAX(is_sampled(Event.weight)).alias("sampled"))
                .where(event_scope(site.id, period))
                .group_by(Event.type))
    found = fetch(rows)
    return ({row["type"]: float(row["weight"]) for row in found},
            any(row["sampled"] for row in found))
