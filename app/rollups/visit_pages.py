"""The pages of each visit (models.VisitPage), merged from the events after ingest
(app.rollups.merging) by UPSERT_SQL from the rows `derived` makes of the new events. The same
`derived` makes rows from stored events for the rebuild (visits.rebuild, which rebuilds a
session's visit and pages together) and for the analytics' pages of visits that cross a
period's edges.
"""
from typing import Any

from peewee import SQL, Case, Select, fn

from app.rollups import upserts
from app.storage.dialect import wide
from models import Event
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


def page_key(event: Any) -> Any:
    """An event's page as the `page` column holds it (NO_PAGE for none)."""
    return fn.COALESCE(event.path, NO_PAGE)


def derived(scope: Any) -> Select:
    """Page rows (COLUMNS) derived from the events of `scope` (a condition on Event)."""
    views = Case(None, [(Event.type == "pageview", 1)], 0)
    return (Event.select(
        Event.site_id, Event.session_id, page_key(Event).alias("page"),
        fn.MAX(Event.anonymous_id).alias("visitor"),
        fn.MIN(Event.occurred_at).alias("started_at"),
        fn.MAX(Event.occurred_at).alias("ended_at"), fn.COUNT(SQL("*")).alias("events"),
        fn.SUM(views).alias("pageviews"), fn.SUM(wide(Event.weight)).alias("events_weight"),
        fn.SUM(views * wide(Event.weight)).alias("pageviews_weight"),
        fn.MAX(Event.weight).alias("weight"))
        .where(scope & Event.session_id.is_null(False))
        .group_by(Event.site_id, Event.session_id, SQL('"page"')))
