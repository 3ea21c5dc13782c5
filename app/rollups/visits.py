"""The visit table (models.Visit): one row per session, merged from the events after ingest
(app.rollups.merging).

Each merge adds the events stored since the last one to their sessions' rows: their first and
last event times, counts, largest weight, and, when they hold a page view earlier (later) than
the row's, the entry (exit) columns. The new events' rows are `derived` from them, as a rebuild
derives a session's row from all of its events; one upsert (`upsert_sql`) merges them into the
stored ones. No column a merge changes (ended_at, the counts) is indexed, even in a partial
index's condition: the two partial indexes read the booleans `lasting` and `plain`, which
change once if ever. So PostgreSQL updates the row in place (HOT, with the table's fillfactor
leaving room), without a new entry in each of its indexes. `rebuild` derives visit rows from
stored events: erasure, pruning, and rows written outside the store path (tests, the
benchmark's seeding) use it.

Ties: events are ordered by time, then by storage order (the event id), so a page view stored
later at the same time is not an earlier entry but is a later exit; the merge keeps that rule:
every event it adds has a larger id than those merged before.
"""
from collections.abc import Iterable
from datetime import timedelta
from functools import cache
from typing import Any

from peewee import SQL, Case, Select, fn

from app.rollups import upserts, visit_pages, visit_paths
from app.storage.dialect import Dialect, current, wide
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
           "interactions", "weight", "heartbeats", "uniform", "plain", "lasting", "storage_free",
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


def lasts(first: Any, last: Any, dialect: Dialect) -> str:
    """SQL: from `first` to `last` (SQL timestamps) is LONG_VISIT or more."""
    return dialect.at_least_a_day_between(first, last)


def _merge_rules(dialect: Dialect) -> dict[str, str]:
    """Per column, how the new events' row (`excluded`) merges into the stored row (`visit`)."""
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
            "lasting": f"visit.lasting OR excluded.lasting OR {lasts(started, ended, dialect)}",
            # TRUE once any of its events is, else NULL (never FALSE: models.Visit)
            "storage_free": "CASE WHEN visit.storage_free OR excluded.storage_free THEN TRUE END",
            **{column: chosen(column, "entry_at", "<") for column in ENTRY_COLUMNS},
            **{column: chosen(column, "exit_at", ">=") for column in EXIT_COLUMNS}}


@cache
def upsert_sql(dialect: Dialect) -> str:
    """The visit upsert, `{rows}` its rows (a SELECT), on PostgreSQL or SQLite."""
    return upserts.upsert_sql("visit", COLUMNS, ("site_id", "session_id"),
                              _merge_rules(dialect))


def uniform(anonymous_id: Any, weight: Any) -> Any:
    """Whether a group of events carries one anonymous id (or none) and one weight."""
    ids = fn.COUNT(anonymous_id)
    return ((fn.MIN(weight) == fn.MAX(weight))
            & ((ids == 0) | ((ids == fn.COUNT(SQL("*")))
                             & (fn.MIN(anonymous_id) == fn.MAX(anonymous_id)))))


def storage_free(marks: Any) -> Any:
    """TRUE when any of a group's events is storage-free (`marks`, their Event.storage_free),
    else NULL: MAX of a boolean is no aggregate on PostgreSQL, hence the CASE."""
    return Case(None, [(fn.MAX(Case(None, [(marks, 1)])) == 1, SQL("TRUE"))])


def derived(scope: Any) -> Select:
    """Visit rows (COLUMNS) derived from the stored events matching `scope` (a condition on
    Event): rebuild's rows, the merges' rows of the events stored since the last one, and the
    analytics' visits clipped to a period at its edges.

    One pass and one GROUP BY: each event is ranked among its session's page views (or among
    its other events) from the first and from the last, and the entry (exit) columns are those
    of the page view ranked first (last), picked by a conditional aggregate. Joining the
    sessions to their first and last page views instead made SQLite scan the page views once
    per session (no automatic index on that join): 10,000 new events of 850 sessions took 0.36
    s to derive, quadratic in the sessions.
    """
    session = [Event.site_id, Event.session_id]
    is_view = Event.type == "pageview"
    # each entry column as its page view's event column
    page_columns = {column: getattr(Event, PAGE_ENTRY_COLUMNS.get(column, column))
                    for column in (*PAGE_ENTRY_COLUMNS, *CONTEXT_COLUMNS)}
    ranked = (Event.select(
        Event.site_id, Event.session_id, Event.anonymous_id, Event.occurred_at, Event.type,
        Event.weight, Event.storage_free,
        *[expression.alias(column) for column, expression in page_columns.items()],
        fn.ROW_NUMBER().over(partition_by=[*session, is_view],
                             order_by=[Event.occurred_at, Event.id]).alias("first_rank"),
        fn.ROW_NUMBER().over(partition_by=[*session, is_view],
                             order_by=[Event.occurred_at.desc(), Event.id.desc()])
        .alias("last_rank"))
        .where(scope & Event.session_id.is_null(False))
        .cte("ranked"))
    r = ranked.c
    views = fn.SUM(Case(None, [(r.type == "pageview", 1)], 0))

    def of_view(rank: Any, column: Any) -> Any:
        return fn.MAX(Case(None, [((r.type == "pageview") & (rank == 1), column)]))

    columns = {"site_id": r.site_id, "session_id": r.session_id,
               "visitor": fn.MAX(r.anonymous_id), "started_at": fn.MIN(r.occurred_at),
               "ended_at": fn.MAX(r.occurred_at), "events": fn.COUNT(SQL("*")),
               "pageviews": views,
               "interactions": fn.SUM(Case(None, [(r.type.in_(INTERACTIONS), 1)], 0)),
               "weight": fn.MAX(r.weight),
               "heartbeats": fn.SUM(Case(None, [(r.type == "heartbeat", wide(r.weight))], 0)),
               "uniform": uniform(r.anonymous_id, r.weight),
               "plain": uniform(r.anonymous_id, r.weight) & (views > 0),
               "lasting": SQL(lasts("MIN(occurred_at)", "MAX(occurred_at)", current())),
               "storage_free": storage_free(r.storage_free),
               "entry_at": of_view(r.first_rank, r.occurred_at),
               **{column: of_view(r.first_rank, getattr(r, column))
                  for column in (*PAGE_ENTRY_COLUMNS, *CONTEXT_COLUMNS)},
               "exit_at": of_view(r.last_rank, r.occurred_at),
               "exit_page": of_view(r.last_rank, r.entry_page)}  # the last view's path
    return (Select([ranked], [columns[column].alias(column) for column in COLUMNS])
            .group_by(r.site_id, r.session_id).with_cte(ranked))


def rebuild(site_id: int | None = None, session_ids: Iterable[str] | None = None, *,
            through: int) -> int:
    """Derive the visit rows and their page rows (visit_pages) of a site (every site: None), or
    of some of its sessions, from their stored events up to the id `through` (the rollups'
    mark, app.rollups.mark), replacing what was there; how many visit rows there are now."""
    if session_ids is None:
        return _rebuild_scope(site_id, None, through)
    wanted = sorted(set(session_ids))
    return sum(_rebuild_scope(site_id, wanted[start:start + REBUILD_SESSIONS], through)
               for start in range(0, len(wanted), REBUILD_SESSIONS))


def _rebuild_scope(site_id: int | None, session_ids: list[str] | None, through: int) -> int:
    scope: Any = Event.id <= through
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
        visit_paths.rebuild(scope)
    return Visit.select().where(tables[Visit]).count()
