"""The visit table (models.Visit), kept up to date by the statement that stores each batch.

Every stored batch adds to its session's visit row: its first and last event times, counts,
largest weight, and, when it holds a page view earlier (later) than the row's, the entry
(exit) columns. A batch's own summary is computed here in Python (one pass over the events the
request already holds); the merge with the stored row is one upsert (`upsert_sql`, inside
app.tracking.store's statements on PostgreSQL). No column a merge changes on every batch
(ended_at, the counts) is indexed, even in a partial index's condition: the two partial
indexes read the booleans `lasting` and `plain`, which change once if ever. So PostgreSQL
updates the row in place (HOT, with the table's fillfactor leaving room), without a new entry
in each of its indexes. `rebuild` derives visit rows from stored events: the migration that
adds the table, erasure, and rows written outside the store path (tests, the benchmark's
seeding) use it.

Ties: events are ordered by time, then by storage order (the event id), so a page view stored
later at the same time is not an earlier entry but is a later exit; the merge keeps that rule.
"""
from collections.abc import Iterable
from datetime import timedelta
from functools import cache
from typing import Any

from peewee import JOIN, SQL, Case, Select, fn

from app import upserts, visit_pages
from app.db import is_postgres
from app.sql import page_path, wide
from models import Event, Visit, VisitPage, database
from models.visit import CONTEXT_COLUMNS, INTERACTIONS

# the entry page view's own columns, by the event column they come from
PAGE_ENTRY_COLUMNS = {"entry_page": "path", "source": "source", "channel": "channel",
                      "referrer": "referrer_url", "utm_source": "utm_source",
                      "utm_medium": "utm_medium", "utm_campaign": "utm_campaign",
                      "utm_content": "utm_content", "utm_term": "utm_term"}
ENTRY_COLUMNS = ("entry_at", *PAGE_ENTRY_COLUMNS, *CONTEXT_COLUMNS)
EXIT_COLUMNS = ("exit_at", "exit_page")
COLUMNS = ("site_id", "session_id", "visitor", "started_at", "ended_at", "events", "pageviews",
           "interactions", "weight", "heartbeats", "uniform", "plain", "lasting",
           *ENTRY_COLUMNS, *EXIT_COLUMNS)
REBUILD_SESSIONS = 500  # session ids per rebuild statement
LONG_VISIT = timedelta(days=1)  # a visit this long or longer is `lasting`


def long_visit() -> SQL:
    """The condition of the partial index visit_long (migration 0011), as a query must spell
    it for the database to use it."""
    return SQL("lasting")


def irregular() -> SQL:
    """The condition of the partial index visit_irregular (migration 0011): a session that is
    no visit (no page view), or whose events carry more than one anonymous id or weight."""
    return SQL("NOT plain")


def lasts(first: Any, last: Any, postgres: bool) -> str:
    """SQL: from `first` to `last` (SQL timestamps) is LONG_VISIT or more."""
    if postgres:
        return f"{last} - {first} >= interval '1 day'"
    return f"julianday({last}) - julianday({first}) >= 1"


def _merge_rules(postgres: bool) -> dict[str, str]:
    """Per column, how a batch's summary (`excluded`) merges into the stored row (`visit`)."""
    def chosen(column: str, at: str, wins: str) -> str:
        return upserts.chosen("visit", column, at, wins)

    def extreme(column: str, wins: str) -> str:
        return upserts.extreme("visit", column, wins)

    # read before the SET assigns: the stored row's own visitor, weight, times and counts
    one_id_and_weight = ("visit.uniform AND excluded.uniform "
                         "AND visit.visitor IS NOT DISTINCT FROM excluded.visitor "
                         "AND visit.weight = excluded.weight")
    started, ended = extreme("started_at", "<"), extreme("ended_at", ">")
    return {"visitor": extreme("visitor", ">"), "started_at": started, "ended_at": ended,
            "weight": extreme("weight", ">"),
            **{column: upserts.summed("visit", column)
               for column in ("events", "pageviews", "interactions", "heartbeats")},
            "uniform": one_id_and_weight,
            "plain": f"{one_id_and_weight} AND visit.pageviews + excluded.pageviews > 0",
            "lasting": f"visit.lasting OR excluded.lasting OR {lasts(started, ended, postgres)}",
            **{column: chosen(column, "entry_at", "<") for column in ENTRY_COLUMNS},
            **{column: chosen(column, "exit_at", ">=") for column in EXIT_COLUMNS}}


@cache
def upsert_sql(postgres: bool) -> str:
    """The visit upsert, `{rows}` its rows (VALUES or a SELECT), on PostgreSQL or SQLite;
    built once per kind (SQLite stores every batch with it)."""
    return upserts.upsert_sql("visit", COLUMNS, ("site_id", "session_id"),
                              _merge_rules(postgres))


def summary(site_id: int, session_id: str | None, visitor: str | None, weight: float,
            context: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One batch's contribution to its visit (every column of COLUMNS), or None for events
    without a session id. `context` is the request's (country ... screen); it is the visit's
    only when the batch holds the visit's first page view, which the merge decides."""
    if session_id is None or not events:
        return None
    times = [event["occurred_at"] for event in events]
    views = [event for event in events if event["type"] == "pageview"]
    entry = min(views, key=lambda event: event["occurred_at"]) if views else None
    # the last of equal times: max() keeps the first maximum it meets, so read backwards
    exit_view = max(reversed(views), key=lambda event: event["occurred_at"]) if views else None
    row = {"site_id": site_id, "session_id": session_id, "visitor": visitor,
           "started_at": min(times), "ended_at": max(times), "events": len(events),
           "pageviews": len(views),
           "interactions": sum(event["type"] in INTERACTIONS for event in events),
           "weight": weight,
           "heartbeats": weight * sum(event["type"] == "heartbeat" for event in events),
           "uniform": True, "plain": bool(views),
           "lasting": max(times) - min(times) >= LONG_VISIT,
           "entry_at": entry["occurred_at"] if entry else None,
           "exit_at": exit_view["occurred_at"] if exit_view else None,
           "exit_page": visit_pages.page(exit_view) if exit_view else None}
    for column, source in PAGE_ENTRY_COLUMNS.items():
        row[column] = entry.get(source) if entry else None
    row["entry_page"] = visit_pages.page(entry) if entry else None  # its path, or its URL's
    for column in CONTEXT_COLUMNS:
        row[column] = context.get(column) if entry else None
    return row


def add(row: dict[str, Any] | None) -> None:
    """Merge one batch's summary into its visit (inside the caller's transaction)."""
    upserts.add_rows(upsert_sql(is_postgres()), Visit, COLUMNS, [row] if row is not None else [])


def uniform(anonymous_id: Any, weight: Any) -> Any:
    """Whether a group of events carries one anonymous id (or none) and one weight."""
    ids = fn.COUNT(anonymous_id)
    return ((fn.MIN(weight) == fn.MAX(weight))
            & ((ids == 0) | ((ids == fn.COUNT(SQL("*")))
                             & (fn.MIN(anonymous_id) == fn.MAX(anonymous_id)))))


def derived(scope: Any) -> Select:
    """Visit rows (COLUMNS) derived from the stored events matching `scope` (a condition on
    Event): rebuild's rows, and the analytics' visits clipped to a period at its edges."""
    sessions = scope & Event.session_id.is_null(False)
    per_session = (Event.select(
        Event.site_id, Event.session_id, fn.MAX(Event.anonymous_id).alias("visitor"),
        fn.MIN(Event.occurred_at).alias("started_at"),
        fn.MAX(Event.occurred_at).alias("ended_at"), fn.COUNT(Event.id).alias("events"),
        fn.SUM(Case(None, [(Event.type == "pageview", 1)], 0)).alias("pageviews"),
        fn.SUM(Case(None, [(Event.type.in_(INTERACTIONS), 1)], 0)).alias("interactions"),
        fn.MAX(Event.weight).alias("weight"),
        fn.SUM(Case(None, [(Event.type == "heartbeat", wide(Event.weight))], 0))
        .alias("heartbeats"),
        uniform(Event.anonymous_id, Event.weight).alias("uniform"),
        (uniform(Event.anonymous_id, Event.weight)
         & (fn.SUM(Case(None, [(Event.type == "pageview", 1)], 0)) > 0)).alias("plain"),
        SQL(lasts("MIN(occurred_at)", "MAX(occurred_at)", is_postgres())).alias("lasting"))
        .where(sessions).group_by(Event.site_id, Event.session_id).cte("per_session"))
    session = [Event.site_id, Event.session_id]
    # each entry column as its page view's event column (the page: its path, derived for old rows)
    page_columns = {column: page_path(Event) if column == "entry_page"
                    else getattr(Event, PAGE_ENTRY_COLUMNS.get(column, column))
                    for column in (*PAGE_ENTRY_COLUMNS, *CONTEXT_COLUMNS)}
    ranked = (Event.select(
        Event.site_id, Event.session_id, Event.occurred_at,
        *[expression.alias(column) for column, expression in page_columns.items()],
        fn.ROW_NUMBER().over(partition_by=session, order_by=[Event.occurred_at, Event.id])
        .alias("first_rank"),
        fn.ROW_NUMBER().over(partition_by=session,
                             order_by=[Event.occurred_at.desc(), Event.id.desc()])
        .alias("last_rank"))
        .where(sessions & (Event.type == "pageview"))
        .cte("ranked"))
    s = per_session.c
    first = Select([ranked], [SQL("*")]).where(ranked.c.first_rank == 1).cte("first_view")
    last = Select([ranked], [SQL("*")]).where(ranked.c.last_rank == 1).cte("last_view")
    f, x = first.c, last.c

    columns = {"site_id": s.site_id, "session_id": s.session_id, "visitor": s.visitor,
               "started_at": s.started_at, "ended_at": s.ended_at, "events": s.events,
               "pageviews": s.pageviews, "interactions": s.interactions, "weight": s.weight,
               "heartbeats": s.heartbeats, "uniform": s.uniform, "plain": s.plain,
               "lasting": s.lasting,
               "entry_at": f.occurred_at,
               **{column: getattr(f, column) for column in (*PAGE_ENTRY_COLUMNS,
                                                            *CONTEXT_COLUMNS)},
               "exit_at": x.occurred_at, "exit_page": x.entry_page}  # the last view's path

    def joined(view: Any) -> Any:
        return (view.site_id == s.site_id) & (view.session_id == s.session_id)

    return (Select([per_session], [columns[column].alias(column) for column in COLUMNS])
            .join(first, JOIN.LEFT_OUTER, on=joined(f))
            .join(last, JOIN.LEFT_OUTER, on=joined(x))
            .with_cte(per_session, ranked, first, last))


def rebuild(site_id: int | None = None, session_ids: Iterable[str] | None = None) -> int:
    """Derive the visit rows and their page rows (app.visit_pages) of a site (every site:
    None), or of some of its sessions, from their stored events, replacing what was there;
    how many visit rows there are now."""
    if session_ids is None:
        return _rebuild_scope(site_id, None)
    wanted = sorted(set(session_ids))
    return sum(_rebuild_scope(site_id, wanted[start:start + REBUILD_SESSIONS])
               for start in range(0, len(wanted), REBUILD_SESSIONS))


def _rebuild_scope(site_id: int | None, session_ids: list[str] | None) -> int:
    scope: Any = SQL("1 = 1")
    tables = {Visit: SQL("1 = 1"), VisitPage: SQL("1 = 1")}
    for model in tables:
        if site_id is not None:
            tables[model] &= model.site_id == site_id
        if session_ids is not None:
            tables[model] &= model.session_id.in_(session_ids)
    if site_id is not None:
        scope &= Event.site_id == site_id
    if session_ids is not None:
        scope &= Event.session_id.in_(session_ids)
        # The event table has no index on session_id: when every session has its row, its
        # events lie between the rows' first and last event times, an index range.
        rows, first, last = Visit.select(fn.COUNT(Visit.id), fn.MIN(Visit.started_at),
                                         fn.MAX(Visit.ended_at)).where(tables[Visit]).scalar(
                                             as_tuple=True)
        if rows == len(session_ids) and first is not None:
            scope &= Event.occurred_at.between(first, last)
    with database.atomic():
        for model, columns, rows in ((Visit, COLUMNS, derived(scope)),
                                     (VisitPage, visit_pages.COLUMNS,
                                      visit_pages.derived(scope))):
            # in the order ingest writes them, so that a period's rows lie together
            ordered = Select([rows.alias("rows")], [SQL("*")]).order_by(SQL('"started_at"'))
            upserts.replace_rows(model, columns, tables[model], ordered,
                                 site_id is None and session_ids is None)
    return Visit.select().where(tables[Visit]).count()
