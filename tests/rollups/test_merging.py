"""The rollups merged after ingest (app.rollups.merging): stored events wait for a merge, a read
merges first and counts them all, the merge timer merges on its own, an event whose id commits after
a larger one is not skipped and the mark never falls inside a transaction, neither at a merge's
end nor between a backlog's steps (PostgreSQL), erasure and pruning with events not merged yet count
nothing twice or lose nothing, and the upgrade that adds the mark takes over the rollups kept
at ingest, on both databases.

The tests' apps otherwise merge in each request (tests/conftest.py); here ROLLUP_MERGE_SECONDS
is set per test.
"""
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

import psycopg2
import pytest
from playhouse.migrations import Runner

from app.cli.db import MIGRATIONS_DIR
from app.retention import erase, prune
from app.rollups import event_slots, merging, visits
from app.rollups.mark import mark, set_mark
from models import Event, RollupMark, Visit, database
from models.site import utcnow
from tests.fixtures.database import BACKEND
from tests.fixtures.helpers import db, wait_for
from tests.fixtures.rollups import (
    NEVER,
    assert_as_rebuilt,
    insert_page_view,
    merged_state,
    post,
    visitors_visits_pageviews,
)


def test_events_wait_for_a_merge_and_a_read_merges_them_first(lazy_app, lazy_client,
                                                             make_site):
    site = make_site()
    post(lazy_client, site, "s-1", "a-1", views=2)
    post(lazy_client, site, "s-2", "a-2")
    post(lazy_client, site, "s-1", "a-1")
    visits, mark, largest = merged_state(lazy_app)
    assert (visits, mark, largest) == (0, 0, 4)

    # 2 visitors, 2 visits, 4 page views: every event stored before the call
    assert visitors_visits_pageviews(lazy_client, site) == [2, 2, 4]
    assert merged_state(lazy_app) == (2, 4, 4)

    post(lazy_client, site, "s-3", "a-1")
    assert visitors_visits_pageviews(lazy_client, site) == [2, 3, 5]
    assert visitors_visits_pageviews(lazy_client, site) == [2, 3, 5]
    assert merged_state(lazy_app) == (3, 5, 5)
    first, *_ = assert_as_rebuilt(lazy_app)
    assert (first["session_id"], first["events"], first["pageviews"]) == ("s-1", 3, 3)


def test_the_timer_merges_a_workers_events_after_the_interval(make_app, make_site):
    app = make_app(ROLLUP_MERGE_SECONDS=0.2)
    client = app.test_client()
    site = make_site()
    post(client, site, "s-1", "a-1")
    post(client, site, "s-2", "a-2")
    deadline = time.monotonic() + 30
    while merged_state(app)[1] < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert merged_state(app) == (2, 2, 2)
    assert_as_rebuilt(app)


@pytest.mark.skipif(BACKEND != "postgres", reason="SQLite has one writer: ids commit in order")
def test_an_id_that_commits_after_a_larger_one_is_not_skipped(lazy_app, lazy_client, make_site,
                                                              migrated):
    """A batch that drew its event id first but commits last: a merge waits for it rather
    than move the mark past its id, and locks nothing that a new batch waits for."""
    site = make_site()
    slow = psycopg2.connect(migrated)
    try:
        # a transaction that has drawn id 1 and not committed
        assert insert_page_view(slow, site.site.id, "s-slow") == 1
        post(lazy_client, site, "s-fast", "a-fast")  # id 2, committed
        assert merged_state(lazy_app)[2] == 2

        done = threading.Event()

        def merge() -> None:
            with db(lazy_app):
                merging.merge()
            done.set()

        merger = threading.Thread(target=merge)
        merger.start()
        assert not done.wait(timeout=0.5)  # the merge waits for the open transaction
        post(lazy_client, site, "s-during", "a-fast")  # ingest does not wait for the merge
        slow.commit()
        merger.join(timeout=30)
        assert done.is_set()
    finally:
        slow.close()
    assert merged_state(lazy_app)[1:] in ((2, 3), (3, 3))  # s-during's id: merged or not yet
    assert_as_rebuilt(lazy_app)


def wait_for_the_merge_to_read_the_sequence(url: str, since: datetime) -> None:
    """Until a session has asked pg_locks for inserts in flight after `since`: the merge has
    read the id sequence and waits for them (app.rollups.mark.inserts_ended)."""
    watcher = psycopg2.connect(url)
    watcher.autocommit = True

    def asked() -> bool:
        with watcher.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid <> "
                           "pg_backend_pid() AND query_start > %s AND query LIKE "
                           "'%%virtualtransaction FROM pg_locks%%'", (since,))
            return bool(cursor.fetchone()[0])

    try:
        wait_for(asked, timeout=30, what="the merge to wait for the inserts in flight")
    finally:
        watcher.close()


@pytest.mark.skipif(BACKEND != "postgres", reason="SQLite has one writer: a merge comes between "
                                                  "its transactions")
def test_the_mark_never_splits_a_transaction(lazy_app, lazy_client, make_site, migrated):
    """A transaction in flight when a merge reads the id sequence may draw ids on both sides of
    the value read (a batch's insert draws them row by row): the merge takes none of its events
    then, not a visit's first page view without its second, and the next merge all of them."""
    site = make_site()
    post(lazy_client, site, "s-1", "a-1", views=2)  # ids 1 and 2, committed: merged
    batch = psycopg2.connect(migrated)
    try:
        assert insert_page_view(batch, site.site.id, "s-2", "/first") == 3
        with batch.cursor() as cursor:
            cursor.execute("SELECT clock_timestamp()")
            started = cursor.fetchone()[0]

        def merge() -> None:
            with db(lazy_app):
                assert merging.merge(wait_seconds=60)

        merger = threading.Thread(target=merge)
        merger.start()
        wait_for_the_merge_to_read_the_sequence(migrated, started)  # it read 3
        assert insert_page_view(batch, site.site.id, "s-2", "/second") == 4
        batch.commit()
        merger.join(timeout=60)
        assert not merger.is_alive()
    finally:
        batch.close()
    assert merged_state(lazy_app) == (1, 2, 4)  # s-1 merged, nothing of s-2
    assert visitors_visits_pageviews(lazy_client, site) == [2, 2, 4]  # a read merges s-2 whole
    assert merged_state(lazy_app) == (2, 4, 4)
    assert_as_rebuilt(lazy_app)


def test_erasure_with_events_not_merged_yet_counts_nothing_twice(lazy_app, lazy_client,
                                                                 make_site):
    """Erasure merges first, then rebuilds the erased sessions from the events merged."""
    site = make_site()
    post(lazy_client, site, "s-1", "a-1")
    post(lazy_client, site, "s-1", "a-2")
    post(lazy_client, site, "s-2", "a-2")
    with db(lazy_app):
        merging.merge()
    post(lazy_client, site, "s-1", "a-1", views=2)  # not merged yet: kept
    post(lazy_client, site, "s-3", "a-2")  # not merged yet: erased
    with db(lazy_app):
        erased = erase.erase_anonymous(site.site.id, "a-2")
    assert (erased["event"], erased["visit"]) == (3, 2)  # s-2 and s-3 had only a-2's events
    visits = assert_as_rebuilt(lazy_app)
    assert [(row["session_id"], row["events"], row["visitor"]) for row in visits] == [
        ("s-1", 3, "a-1")]


def test_new_events_after_erasing_the_largest_ids_are_merged(lazy_app, lazy_client, make_site):
    """SQLite gives a new row the largest id left plus one: after the newest events are erased
    the mark comes back with them, so the next events are not taken as merged."""
    site = make_site()
    post(lazy_client, site, "s-1", "a-1")
    post(lazy_client, site, "s-2", "a-2", views=3)
    with db(lazy_app):
        merging.merge()
        erase.erase_anonymous(site.site.id, "a-2")
    # (the mark, the largest id): PostgreSQL's next id is 5 whatever the mark
    assert merged_state(lazy_app)[1:] == ((1, 1) if BACKEND == "sqlite" else (4, 1))
    post(lazy_client, site, "s-3", "a-3", views=2)
    assert visitors_visits_pageviews(lazy_client, site) == [2, 2, 3]
    assert_as_rebuilt(lazy_app)


@pytest.mark.skipif(BACKEND != "sqlite", reason="PostgreSQL's ids never repeat; pruning there "
                    "drops whole partitions, the test database's among them")
def test_pruning_every_event_keeps_the_next_ones_merged(lazy_app, lazy_client, make_site):
    site = make_site()
    post(lazy_client, site, "s-1", "a-1", views=2)
    with db(lazy_app):
        merging.merge()
        cutoffs = prune.PruneCutoffs.at(datetime(2999, 1, 1), 1, 30)
        prune.prune(cutoffs)
        assert Event.select().count() == 0
    post(lazy_client, site, "s-2", "a-2")
    assert visitors_visits_pageviews(lazy_client, site) == [1, 1, 1]


def test_the_mark_is_one_row(lazy_app, lazy_client, make_site):
    site = make_site()
    for n in range(3):
        post(lazy_client, site, f"s-{n}", "a-1")
        with db(lazy_app):
            merging.merge()
    with db(lazy_app), database.atomic():
        assert [(row.id, row.merged_through) for row in RollupMark.select()] == [(1, 3)]


# the columns of later migrations that the live code deriving visit rows writes or reads
LATER_COLUMNS = (("event", "storage_free", "BOOLEAN"), ("visit", "storage_free", "BOOLEAN"),
                 ("visit", "path_head", "TEXT"), ("visit", "path_end_at", "TIMESTAMP"),
                 ("visit", "path_weight", "REAL"))


@contextmanager
def lent_later_columns() -> Iterator[None]:
    """The columns of migrations 0020 (storage_free) and 0021 (path heads) on a database
    migrated to before them, while the block runs: the live code that derives the rows the
    version before kept reads and writes them."""
    for table, column, kind in LATER_COLUMNS:
        database.execute_sql(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
    try:
        yield
    finally:
        for table, column, _ in LATER_COLUMNS:
            database.execute_sql(f"ALTER TABLE {table} DROP COLUMN {column}")


def test_the_upgrade_marks_every_event_stored_before_it_merged(make_app, fresh_url):
    """Migration 0014 on a database whose rollups the store statement kept (as 0011 derives
    them): the mark starts at the largest id, so no event is merged a second time."""
    app = make_app(DATABASE_URL=fresh_url, ROLLUP_MERGE_SECONDS=NEVER)

    def add(session: str, count: int) -> None:
        now = utcnow()
        Event.insert_many([{"site_id": 1, "session_id": session, "anonymous_id": "a-1",
                            "type": "pageview", "page_url": "https://std.example/", "path": "/",
                            "occurred_at": now, "received_at": now, "weight": 1.0}
                           for _ in range(count)]).execute()

    with db(app):
        Runner(database.obj, directory=MIGRATIONS_DIR).up(target="0013_named_properties")
        add("s-1", 3)
        with lent_later_columns():
            visits.rebuild(through=3)  # what the version before kept at ingest
        event_slots.rebuild(through=3)
    result = app.test_cli_runner().invoke(args=["db", "upgrade"])
    assert "0014_rollup_mark" in result.output, result.output
    with db(app):
        assert mark() == 3
        add("s-1", 2)
        merging.merge()
        assert (Visit.get().events, mark()) == (5, 5)
    assert_as_rebuilt(app)


def test_an_upgrade_from_before_the_rollups_derives_them_all(make_app, fresh_url):
    """From a database at migration 0010 (the visit table kept by its store statement, no other
    rollup): 0011 empties the visit table, 0014 starts the mark at 0, and `flask db upgrade`
    merges every event: the rollups are those derived anew, with no migration importing the
    app's code to derive them."""
    app = make_app(DATABASE_URL=fresh_url, ROLLUP_MERGE_SECONDS=NEVER)
    with db(app):
        Runner(database.obj, directory=MIGRATIONS_DIR).up(target="0010_visits")
        now = utcnow()
        for number, session in enumerate(("s-1", "s-1", "s-2")):
            database.execute_sql(
                "INSERT INTO event (site_id, session_id, anonymous_id, type, page_url, "
                "occurred_at, received_at, weight) VALUES (1, %s, 'a-1', 'pageview', %s, %s, %s, "
                "1)".replace("%s", database.param),
                (session, f"https://std.example/p{number}", now, now))
        database.execute_sql(  # a row as that version kept it, counts and all: derived anew
            "INSERT INTO visit (site_id, session_id, started_at, ended_at, events, pageviews, "
            "interactions, weight) VALUES (1, 's-1', '2020-01-01', '2020-01-01', 99, 99, 0, 1)")
    result = app.test_cli_runner().invoke(args=["db", "upgrade"])
    assert result.exit_code == 0 and "0011_rollups" in result.output, result.output
    with db(app):
        assert mark() == 3
    rows = assert_as_rebuilt(app)
    assert [(row["session_id"], row["events"], row["entry_page"], row["exit_page"])
            for row in rows] == [("s-1", 2, "/p0", "/p1"), ("s-2", 1, "/p2", "/p2")]


def test_a_backlog_is_merged_in_steps(lazy_app, lazy_client, make_site, monkeypatch):
    monkeypatch.setattr(merging, "MERGE_IDS", 2)  # ids per merge transaction
    site = make_site()
    post(lazy_client, site, "s-1", "a-1", views=3)
    post(lazy_client, site, "s-2", "a-2")
    post(lazy_client, site, "s-1", "a-1")
    with db(lazy_app):
        merging.merge()
    assert merged_state(lazy_app) == (2, 5, 5)
    first, _ = assert_as_rebuilt(lazy_app)
    assert (first["events"], first["entry_page"], first["exit_page"]) == (4, "/p0", "/p0")


@pytest.mark.skipif(BACKEND != "postgres", reason="SQLite commits a backlog's steps together")
def test_a_backlogs_steps_split_no_transaction(lazy_app, lazy_client, make_site, monkeypatch):
    """Reads that come while a backlog is merged see each step's mark (PostgreSQL commits each
    step): a step stops short of a batch that would continue past it."""
    monkeypatch.setattr(merging, "MERGE_IDS", 2)
    marks: list[int] = []

    def recording_set_mark(through: int) -> None:
        marks.append(through)
        set_mark(through)

    monkeypatch.setattr(merging, "set_mark", recording_set_mark)
    site = make_site()
    for number, views in enumerate((2, 1, 2, 1)):  # ids 1-2, 3, 4-5, 6
        post(lazy_client, site, f"s-{number}", f"a-{number}", views=views)
    with db(lazy_app):
        assert merging.merge()
    assert marks == [2, 3, 5, 6]  # not 4: ids 4 and 5 are one batch's
    assert merged_state(lazy_app) == (4, 6, 6)
    assert_as_rebuilt(lazy_app)
