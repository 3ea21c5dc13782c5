"""The read path (app.analytics.reading): no other session stalls an answer, and every figure of an
answer counts the same events.

- A real idle transaction that inserted into the event table (a second psycopg2 connection)
  holds the merge: the MCP answer comes within EGIS_ROLLUP_WAIT_SECONDS with a warning, counts
  what was merged before it, and neither its uncommitted row nor the rows committed after it;
  the waiting read holds no merge lock. egis's own connections end such a transaction. One in
  a copy of the database (the same relation OIDs) holds nothing.
- SQLite: a read with nothing new takes no write lock; one with something new waits for the
  write lock within the bound, then answers with the warning.
- A read's event scans stop at the mark in its snapshot, and its snapshot holds still while
  merges commit (both databases; PostgreSQL also across `concurrently`'s threads).
"""
import os
import sqlite3
import threading
import time
from datetime import timedelta
from typing import Any

import psycopg2
import pytest

from app import create_app
from app.analytics import query
from app.analytics.period import Period
from app.analytics.reading import STALE, reading
from app.cli.db import upgrade_schema
from app.rollups import merging
from app.rollups.mark import mark
from app.storage.db import make_database, release_connections
from models import Event, Site, database
from models.site import utcnow
from tests.fixtures.database import BACKEND, _admin, create_site
from tests.fixtures.helpers import db
from tests.fixtures.rollups import NEVER, insert_page_view, merged_state, post, query_result

WAIT = 0.5  # EGIS_ROLLUP_WAIT_SECONDS of these tests
HOST = ["is", "event:hostname", ["std.example"]]  # read from the events, not the quarter hours
postgres_only = pytest.mark.skipif(BACKEND != "postgres", reason="PostgreSQL's sessions")
sqlite_only = pytest.mark.skipif(BACKEND != "sqlite", reason="SQLite's write lock")


@pytest.fixture
def waiting_app(make_app):
    return make_app(ROLLUP_MERGE_SECONDS=NEVER, ROLLUP_WAIT_SECONDS=WAIT)


def totals(client, site, **arguments) -> tuple[list, list[str], str]:
    """(visitors, visits, page views), the answer's warnings and its text."""
    result = query_result(client, site, **arguments)
    structured = result["structuredContent"]
    return structured["totals"], structured["warnings"], result["content"][0]["text"]


def idle_insert(url: str, site_id: int) -> psycopg2.extensions.connection:
    """A connection that inserted an event and sits idle in its transaction."""
    connection = psycopg2.connect(url)
    insert_page_view(connection, site_id, "s-idle")
    return connection


@postgres_only
def test_an_idle_insert_holds_up_no_answer(waiting_app, make_site, migrated):
    client = waiting_app.test_client()
    site = make_site()
    post(client, site, "s-1", "a-1", views=2)
    assert totals(client, site)[:2] == ([1, 1, 2], [])  # merged by this read
    idle = idle_insert(migrated, site.site.id)
    try:
        post(client, site, "s-2", "a-2")  # committed after the idle insert drew its id
        started = time.monotonic()
        for arguments in ({}, {"filters": [HOST]}):  # from the quarter hours; from the events
            counted, warnings, text = totals(client, site, **arguments)
            assert counted == [1, 1, 2]  # neither s-idle (uncommitted) nor s-2 (after it)
            assert warnings == [STALE.format(seconds=WAIT)]
            assert f"Warning: {warnings[0]}" in text
        assert time.monotonic() - started < 10 * WAIT + 5  # bounded: not until the commit
        # every tool says so, in its answer and its text (the kept tools' schemas allow it)
        overview = query_result(client, site)  # the read tools' envelope
        assert overview["structuredContent"]["warnings"]
        assert merged_state(waiting_app)[1] == 2  # the mark stayed before the idle insert
        idle.commit()
    finally:
        idle.close()
    assert totals(client, site)[:2] == ([3, 3, 4], [])


@pytest.fixture
def twin_databases(migrated: str) -> Any:
    """(a migrated database with the site std.example, a copy of it made with CREATE DATABASE
    ... TEMPLATE: the same tables under the same OIDs), as URLs; dropped after the test."""
    base, name = migrated.rsplit("/", 1)[0], f"egis_twin_{os.getpid()}"
    original, copy = f"{name}_a", f"{name}_b"
    for database_name in (original, copy):
        _admin(f"DROP DATABASE IF EXISTS {database_name} WITH (FORCE)")
    _admin(f"CREATE DATABASE {original}")
    app = create_app({"DATABASE_URL": f"{base}/{original}"})
    with app.app_context():
        upgrade_schema()
    keys = create_site(app, "std.example", "standard")
    release_connections()
    _admin(f"CREATE DATABASE {copy} TEMPLATE {original}")
    yield f"{base}/{original}", f"{base}/{copy}", keys
    release_connections()
    for database_name in (original, copy):
        _admin(f"DROP DATABASE IF EXISTS {database_name} WITH (FORCE)")


def event_oid(url: str) -> int:
    connection = psycopg2.connect(url)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 'event'::regclass::oid")
            return cursor.fetchone()[0]
    finally:
        connection.close()


@postgres_only
def test_an_insert_in_a_copy_of_the_database_holds_up_no_merge(make_app, twin_databases):
    original, copy, site = twin_databases
    assert event_oid(original) == event_oid(copy)  # what pg_locks names the table by
    app = make_app(DATABASE_URL=original, ROLLUP_MERGE_SECONDS=NEVER, ROLLUP_WAIT_SECONDS=WAIT)
    client = app.test_client()
    # In the database itself, an idle insert holds the merge up to its bound.
    idle = idle_insert(original, site.site.id)
    try:
        post(client, site, "s-1", "a-1")
        with db(app):
            assert merging.merge(WAIT) is False
    finally:
        idle.rollback()
        idle.close()
    # In the copy, the same idle insert holds nothing: the merge takes every event at once.
    idle = idle_insert(copy, site.site.id)
    try:
        post(client, site, "s-2", "a-2")
        started = time.monotonic()
        with db(app):
            assert merging.merge(WAIT) is True
        assert time.monotonic() - started < WAIT
        # both visits merged, the mark at the last id (2 went to the insert rolled back)
        assert merged_state(app) == (2, 3, 3)
    finally:
        idle.rollback()
        idle.close()


@postgres_only
def test_every_tool_carries_the_warning(waiting_app, make_site, migrated):
    from tests.fixtures.helpers import tool_result

    client = waiting_app.test_client()
    site = make_site()
    post(client, site, "s-1", "a-1")
    totals(client, site)
    headers = {"Authorization": f"Bearer {site.server_key}", "Accept": "application/json",
               "MCP-Protocol-Version": "2025-11-25"}
    idle = idle_insert(migrated, site.site.id)
    try:
        post(client, site, "s-2", "a-2")
        for tool, arguments in (("get_overview", {}), ("describe_data", {}),
                                ("funnel", {"steps": [{"page": "/p0"}, {"page": "/p1"}]}),
                                ("get_web_vitals", {})):
            result = tool_result(client, headers, tool, {"period": "7d", **arguments})
            assert not result.get("isError"), result
            assert result["structuredContent"]["warnings"] == [STALE.format(seconds=WAIT)]
            assert result["content"][0]["text"].endswith(f"Warning: {STALE.format(seconds=WAIT)}")
    finally:
        idle.rollback()
        idle.close()
    result = tool_result(client, headers, "get_overview", {"period": "7d"})
    assert "warnings" not in result["structuredContent"]
    assert result["structuredContent"]["pageviews"] == 2


@postgres_only
def test_a_read_waiting_for_inserts_holds_no_merge_lock(waiting_app, make_site, migrated):
    """While a read waits for the idle insert, another session takes the merge lock at once."""
    site = make_site()
    post(waiting_app.test_client(), site, "s-1", "a-1")
    idle = idle_insert(migrated, site.site.id)
    waiting = threading.Event()
    outcome: list[bool] = []

    def read() -> None:
        with db(waiting_app):
            waiting.set()
            outcome.append(merging.merge(wait_seconds=3))

    reader = threading.Thread(target=read)
    other = psycopg2.connect(migrated)
    try:
        reader.start()
        assert waiting.wait(timeout=10)
        time.sleep(0.3)  # well within the reader's 3 s wait
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", (merging.MERGE_LOCK_ID,))
            assert cursor.fetchone() == (True,)
            cursor.execute("SELECT pg_advisory_unlock(%s)", (merging.MERGE_LOCK_ID,))
        reader.join(timeout=30)
        assert outcome == [False]
    finally:
        idle.rollback()
        idle.close()
        other.close()
    with db(waiting_app):
        assert merging.merge()
    assert merged_state(waiting_app)[0] == 1


@postgres_only
def test_the_timer_tries_again_until_the_idle_insert_ends(make_app, make_site, migrated):
    app = make_app(ROLLUP_MERGE_SECONDS=0.1, ROLLUP_WAIT_SECONDS=0.1)
    site = make_site()
    idle = idle_insert(migrated, site.site.id)  # id 1
    try:
        post(app.test_client(), site, "s-1", "a-1")  # id 2: the timer's merges wait for id 1
        time.sleep(1)  # several of the timer's rounds
        assert merged_state(app)[:2] == (0, 0)
        idle.commit()
    finally:
        idle.close()
    deadline = time.monotonic() + 30
    while merged_state(app)[:2] != (2, 2):
        assert time.monotonic() < deadline, merged_state(app)
        time.sleep(0.05)


@postgres_only
def test_egis_connections_end_a_transaction_left_idle(app, migrated):
    with db(app):
        setting = database.execute_sql("SHOW idle_in_transaction_session_timeout").fetchone()
    assert setting == ("30s",)
    stuck = make_database(migrated, idle_transaction_seconds=1)  # egis's pool, a short limit
    stuck.connect()
    try:
        pid = stuck.execute_sql("SELECT pg_backend_pid()").fetchone()[0]
        stuck.execute_sql("BEGIN")
        stuck.execute_sql("INSERT INTO event (site_id, type, occurred_at, received_at, weight) "
                          "VALUES (1, 'pageview', now(), now(), 1)")
        observer = psycopg2.connect(migrated)
        observer.autocommit = True
        try:
            deadline = time.monotonic() + 20
            with observer.cursor() as cursor:
                while time.monotonic() < deadline:
                    cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s",
                                   (pid,))
                    if cursor.fetchone() == (0,):
                        break
                    time.sleep(0.1)
                else:
                    pytest.fail("the idle transaction's session is still there")
                cursor.execute("SELECT count(*) FROM event")
                assert cursor.fetchone() == (0,)  # rolled back
        finally:
            observer.close()
    finally:
        stuck.close_all()


@sqlite_only
def test_sqlite_a_read_with_nothing_new_takes_no_write_lock(waiting_app, make_site, migrated):
    client = waiting_app.test_client()
    site = make_site()
    post(client, site, "s-1", "a-1")
    assert totals(client, site)[:2] == ([1, 1, 1], [])
    holder = sqlite3.connect(migrated.removeprefix("sqlite:///"), isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another writer holds the write lock
        assert totals(client, site)[:2] == ([1, 1, 1], [])  # nothing new: no write lock wanted
        holder.execute("ROLLBACK")
        post(client, site, "s-2", "a-2")
        holder.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        assert totals(client, site)[:2] == ([1, 1, 1], [STALE.format(seconds=WAIT)])
        assert time.monotonic() - started < 10 * WAIT + 5  # not the 10 s busy timeout
        holder.execute("ROLLBACK")
    finally:
        holder.close()
    assert totals(client, site)[:2] == ([2, 2, 2], [])


def test_a_reads_event_scans_stop_at_the_mark_of_its_snapshot(lazy_app, lazy_client,
                                                              make_site):
    """Events committed but not merged count in no figure: not in page views while missing in
    visits. And a merge that commits during a read changes none of its figures."""
    site = make_site()
    post(lazy_client, site, "s-1", "a-1", views=2)
    with db(lazy_app):
        assert merging.merge()
        now = utcnow()
        Event.insert_many([{"site_id": site.site.id, "session_id": "s-2", "anonymous_id": "a-2",
                            "type": "pageview", "page_url": "https://std.example/",
                            "path": "/", "hostname": "std.example", "occurred_at": now,
                            "received_at": now, "weight": 1.0}] * 3).execute()
        today = now.date()
        period = Period(today - timedelta(days=6), today)
        stored = Site.get_by_id(site.site.id)
        asked = [query.parse_query({"metrics": ["visitors", "visits", "pageviews", "events"],
                                    **extra})
                 for extra in ({}, {"filters": [HOST]},
                               {"filters": [HOST], "compare": "previous_period"})]

        def figures() -> list[list]:
            return [query.run_query(stored, period, one)["totals"] for one in asked]

        with reading():
            before = figures()
            marks: list[int] = []
            merger = threading.Thread(target=lambda: marks.append(_merge(lazy_app)))
            merger.start()
            merger.join(timeout=30)
            during = figures()
        with reading():
            after = figures()
    assert marks == [5]  # committed during the read
    assert before == during == [[1, 1, 2, 2]] * 3
    assert after == [[2, 2, 5, 5]] * 3


def _merge(app) -> int:
    """Merge in a connection of its own; the mark after."""
    with db(app):
        assert merging.merge()
        return mark()
