"""The pages of each visit (models.VisitPage), kept up to date by the statement that stores each
batch: a batch's rows (one per page it has events on) are merged into the stored ones by
UPSERT_SQL, on PostgreSQL from rows that app.tracking.store's statements make of the events
they have just stored (with `page_key`), on SQLite from `summary`'s, made here in Python.
`derived` makes the same rows from stored events: the rebuild (app.visits.rebuild, which
rebuilds a session's visit and pages together) and the analytics' pages of visits that cross a
period's edges use it.
"""
import re
from typing import Any

from peewee import SQL, Case, Select, fn

from app import upserts
from app.sql import page_path, wide
from models import Event, VisitPage
from models.visit_page import NO_PAGE

COLUMNS = ("site_id", "session_id", "page", "visitor", "started_at", "ended_at", "events",
           "pageviews", "events_weight", "pageviews_weight", "weight")
UPSERT_SQL = upserts.upsert_sql("visit_page", COLUMNS, ("site_id", "session_id", "page"), {
    "visitor": upserts.extreme("visit_page", "visitor", ">"),
    "started_at": upserts.extreme("visit_page", "started_at", "<"),
    "ended_at": upserts.extreme("visit_page", "ended_at", ">"),
    **{column: upserts.summed("visit_page", column)
       for column in ("events", "pageviews", "events_weight", "pageviews_weight")},
    "weight": upserts.extreme("visit_page", "weight", ">")})
URL_END = re.compile("[?#]")


def page(event: dict[str, Any]) -> str | None:
    """An event's page as rebuild and the event-based reports read it
    (app.sql.page_path): its `path`, else what app.sql.url_path makes of
    its URL (ingest stores no path for a URL that is neither absolute nor a path)."""
    if event.get("path") is not None or not event.get("page_url"):
        return event.get("path")
    bare = URL_END.split(event["page_url"], maxsplit=1)[0]
    scheme_end = bare.find("://")
    if scheme_end >= 0:
        authority_on = bare[scheme_end + 3:]
        slash = authority_on.find("/")
        bare = authority_on[slash:] if slash >= 0 else ""
    return bare or "/"


def summary(site_id: int, session_id: str | None, visitor: str | None, weight: float,
            events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One batch's contribution to its visit's pages (COLUMNS), a row per page; none for
    events without a session id (SQLite's store path)."""
    if session_id is None:
        return []
    pages: dict[str, dict[str, Any]] = {}
    for event in events:
        key = page(event) or NO_PAGE
        at = event["occurred_at"]
        views = int(event["type"] == "pageview")
        row = pages.get(key)
        if row is None:
            pages[key] = {"site_id": site_id, "session_id": session_id, "page": key,
                          "visitor": visitor, "started_at": at, "ended_at": at, "events": 1,
                          "pageviews": views, "events_weight": weight,
                          "pageviews_weight": weight * views, "weight": weight}
            continue
        row["started_at"], row["ended_at"] = min(row["started_at"], at), max(row["ended_at"], at)
        row["events"] += 1
        row["pageviews"] += views
        row["events_weight"] += weight
        row["pageviews_weight"] += weight * views
    return list(pages.values())


def add(rows: list[dict[str, Any]]) -> None:
    """Merge one batch's page rows into the stored ones (inside the caller's transaction)."""
    upserts.add_rows(UPSERT_SQL, VisitPage, COLUMNS, rows)


def page_key(event: Any) -> Any:
    """An event's page as the `page` column holds it (NO_PAGE for none)."""
    return fn.COALESCE(page_path(event), NO_PAGE)


def derived(scope: Any, events: Any = Event) -> Select:
    """Page rows (COLUMNS) derived from the events of `scope` (a condition on `events`: the
    event table, or the events a store statement has just inserted, app.tracking.store)."""
    page = page_key(events)
    views = Case(None, [(events.type == "pageview", 1)], 0)
    return (events.select(
        events.site_id, events.session_id, page.alias("page"),
        fn.MAX(events.anonymous_id).alias("visitor"),
        fn.MIN(events.occurred_at).alias("started_at"),
        fn.MAX(events.occurred_at).alias("ended_at"), fn.COUNT(SQL("*")).alias("events"),
        fn.SUM(views).alias("pageviews"), fn.SUM(wide(events.weight)).alias("events_weight"),
        fn.SUM(views * wide(events.weight)).alias("pageviews_weight"),
        fn.MAX(events.weight).alias("weight"))
        .where(scope & events.session_id.is_null(False))
        .group_by(events.site_id, events.session_id, SQL('"page"')))
