"""Migration 0016 and its upgrade task (app.tracking.backfill): the rows stored before ingest
derived the page and acquisition columns get them as ingest derives them today, and their
sessions' visits are derived again, so the read side, which reads those columns only, counts
them (both backends)."""
from datetime import datetime, timedelta
from typing import Any

import pytest

from app.cli.db import upgrade_schema
from app.rollups import merging as rollups
from models import Event, UpgradeTask, Visit
from tests.fixtures.helpers import db, tool_result

AT = datetime(2026, 3, 10, 12, 0)
PERIOD = {"from": "2026-03-10", "to": "2026-03-10"}


def _upgrade_with_the_task_pending() -> None:
    """`flask db upgrade` on a database migrated to 0016 whose task has not run yet."""
    UpgradeTask.insert(name="derived_columns").on_conflict_ignore().execute()
    assert upgrade_schema() == []  # no migration left: the task alone
    assert UpgradeTask.select().count() == 0  # done, once


def _old_row(site_id: int, session: str, kind: str, minute: int, url: str,
             referrer: str | None = None) -> dict[str, Any]:
    """An event as stored before migration 0006's columns were filled: none of them."""
    return {"site_id": site_id, "session_id": session, "anonymous_id": f"v-{session}",
            "type": kind, "page_url": url, "referrer": referrer,
            "occurred_at": AT + timedelta(minutes=minute),
            "received_at": AT + timedelta(minutes=minute)}


COLUMNS = ("path", "hostname", "source", "channel", "referrer_url", "utm_source", "utm_medium",
           "utm_campaign")


@pytest.fixture
def old_site(app, make_site):
    keys = make_site("old.example", "standard")
    with db(app):
        Event.insert_many([
            _old_row(keys.site.id, "s1", "pageview", 0,
                     "https://www.old.example/pricing?utm_campaign=spring#plans",
                     "https://www.google.com/search?q=old"),
            _old_row(keys.site.id, "s1", "click", 1, "https://www.old.example/pricing"),
            _old_row(keys.site.id, "s2", "pageview", 5,
                     "https://old.example/?utm_source=newsletter&utm_medium=email",
                     "https://old.example/elsewhere"),
        ]).execute()
        # and one row that ingest already filled: left as it is
        Event.insert(_old_row(keys.site.id, "s3", "pageview", 9, "https://old.example/a")
                     | {"path": "/kept", "hostname": "kept.example", "source": "Kept",
                        "channel": "Referral"}).execute()
        rollups.rebuild()  # the visits as the previous version derived them
    return keys


def _query(app, keys, **arguments: Any) -> list[tuple[Any, ...]]:
    result = tool_result(app.test_client(), keys.server_headers(), "query",
                         {**PERIOD, **arguments})
    assert result["isError"] is False, result
    return [(*row["dimensions"], *row["metrics"]) for row in result["structuredContent"]["results"]]


def test_old_rows_read_as_ingest_would_store_them(app, old_site):
    # before: the old visits have neither source nor entry page for the read side
    assert _query(app, old_site, metrics=["visits"], dimensions=["visit:source"]) == [
        (None, 2), ("Kept", 1)]
    with db(app):
        _upgrade_with_the_task_pending()
        found = {(row.session_id, row.type): tuple(getattr(row, name) for name in COLUMNS)
                 for row in Event.select().order_by(Event.id)}
        visits = {row.session_id: (row.source, row.channel, row.entry_page, row.referrer)
                  for row in Visit.select()}
    assert found == {
        ("s1", "pageview"): ("/pricing", "old.example", "Google", "Organic Search",
                             "https://www.google.com/search", None, None, "spring"),
        ("s1", "click"): ("/pricing", "old.example", None, None, None, None, None, None),
        ("s2", "pageview"): ("/", "old.example", "newsletter", "Email", None, "newsletter",
                             "email", None),
        ("s3", "pageview"): ("/kept", "kept.example", "Kept", "Referral", None, None, None,
                             None),
    }
    assert visits == {"s1": ("Google", "Organic Search", "/pricing",
                             "https://www.google.com/search"),
                      "s2": ("newsletter", "Email", "/", None),
                      "s3": ("Kept", "Referral", "/kept", None)}
    assert _query(app, old_site, metrics=["visits"], dimensions=["visit:source"]) == [
        ("Google", 1), ("Kept", 1), ("newsletter", 1)]
    assert _query(app, old_site, metrics=["pageviews"], dimensions=["event:page"]) == [
        ("/", 1), ("/kept", 1), ("/pricing", 1)]


def test_a_second_run_changes_nothing(app, old_site):
    with db(app):
        _upgrade_with_the_task_pending()
        before = [tuple(row) for row in Event.select().tuples()]
        _upgrade_with_the_task_pending()
        assert [tuple(row) for row in Event.select().tuples()] == before
