"""Monthly partitions of the event table on PostgreSQL (app/storage/partitions.py, migration 0004):
no insert ever fails for want of a partition, months are created ahead and dropped whole by
retention, analytics queries read only their period's partitions, and a batch is still stored
exactly once. SQLite keeps one table."""
import logging
import os
import uuid
from datetime import date, datetime, timedelta

import orjson
import pytest
from peewee import OperationalError, fn
from playhouse.migrations import Runner

from app.analytics.revenue import ATTRIBUTION_LOOKBACK_DAYS
from app.cli.db import MIGRATIONS_DIR
from app.retention import prune
from app.rollups import merging
from app.storage import partitions
from app.storage.db import release_connections
from app.storage.partitions import Month, month_start
from models import Event, database
from models.site import utcnow
from tests.fixtures.database import BACKEND, PG_ADMIN_URL, _admin
from tests.fixtures.tracking import batch, db, event, goal, now_ms, post_json

postgres_only = pytest.mark.skipif(BACKEND != "postgres", reason="partitions are PostgreSQL's")


def partition_of_rows(app) -> dict[int, str]:
    """Event id -> the partition its row sits in."""
    with db(app):
        rows = database.execute_sql("SELECT id, tableoid::regclass::text FROM event").fetchall()
    return dict(rows)


def partition_for(app, moment: datetime) -> str:
    """The partition a row of `moment` belongs in: its month's, or DEFAULT when it has none."""
    with db(app):
        months = partitions.monthly_partitions()
    own = Month(month_start(moment))
    return own.name if own in months else partitions.DEFAULT_PARTITION


def add_events(site_id: int, *moments: datetime) -> None:
    Event.insert_many([{"site_id": site_id, "type": "pageview", "occurred_at": moment,
                        "received_at": moment} for moment in moments]).execute()


@pytest.mark.parametrize(("moment", "later", "start"), [
    (datetime(2026, 11, 23, 18, 5), 0, datetime(2026, 11, 1)),
    (datetime(2026, 11, 23, 18, 5), -3, datetime(2026, 8, 1)),
    (datetime(2026, 1, 31, 23, 59), -1, datetime(2025, 12, 1)),
    (datetime(2026, 3, 1), -14, datetime(2025, 1, 1)),
    (datetime(2026, 11, 30), 2, datetime(2027, 1, 1)),
])
def test_month_start(moment, later, start):
    assert month_start(moment, later) == start


@pytest.mark.skipif(BACKEND != "sqlite", reason="the SQLite side")
def test_sqlite_keeps_one_table(app):
    with db(app):
        assert partitions.ensure() == [] and partitions.monthly_partitions() == []
        assert partitions.drop_months_before(utcnow()) == {}
    result = app.test_cli_runner().invoke(args=["db", "partitions"])
    assert result.stdout == "SQLite keeps one event table: nothing to partition.\n"


@postgres_only
def test_the_event_table_is_partitioned_by_month_with_a_default(app):
    with db(app):
        (key,) = database.execute_sql(
            "SELECT pg_get_partkeydef('event'::regclass)").fetchone()
        months = partitions.monthly_partitions()
    assert key == "RANGE (occurred_at)"
    this_month = month_start(utcnow())
    assert {Month(month_start(this_month, n)) for n in range(4)} <= set(months)
    lines = app.test_cli_runner().invoke(args=["db", "partitions"]).stdout.splitlines()
    assert f"{this_month:event_%Y_%m}\t{this_month:%Y-%m-%d} to " in "\n".join(lines)
    assert lines[-1] == "event_default\tany other time"


@postgres_only
def test_no_insert_fails_for_want_of_a_partition(client, app, std_site):
    """Rows of a month without its partition land in the DEFAULT partition: ingest's oldest
    (400 days before their receipt), and rows written by hand years off; this month's events
    in their own."""
    body = batch([event(timestamp=now_ms() - 400 * 86_400_000), event()])
    assert post_json(client, "/api/events", body, std_site.write_headers()).status_code == 200
    old_goal = f"{utcnow() - timedelta(days=399):%Y-%m-%dT%H:%M:%S}Z"
    assert post_json(client, "/api/goals", goal(client_timestamp=old_goal),
                     std_site.write_headers()).status_code == 200
    with db(app):
        add_events(std_site.site.id, datetime(2091, 5, 1), datetime(1, 1, 1))
        stored = dict(Event.select(Event.id, Event.occurred_at).tuples())
    assert partition_of_rows(app) == {row: partition_for(app, moment)
                                      for row, moment in stored.items()}
    assert sorted(partition_of_rows(app).values()).count("event_default") >= 2
    assert f"{utcnow():event_%Y_%m}" in partition_of_rows(app).values()


@postgres_only
def test_a_month_waiting_in_the_default_partition_gets_its_own(app, std_site):
    now = utcnow()
    recent, ancient = month_start(now, -20), month_start(now, -30)  # inside, outside the window
    with db(app):
        add_events(std_site.site.id, recent, recent + timedelta(days=3), ancient)
        created = partitions.ensure()
        assert f"{recent:event_%Y_%m}" in created
        assert f"{ancient:event_%Y_%m}" not in created
        assert partitions.ensure() == []  # idempotent
    assert sorted(partition_of_rows(app).values()) == sorted([
        "event_default", f"{recent:event_%Y_%m}", f"{recent:event_%Y_%m}"])


@postgres_only
def test_prune_drops_whole_months_and_deletes_only_what_is_left(app, std_site):
    now = utcnow()
    cutoff = month_start(now, -3)
    old_month, kept_month = month_start(now, -5), month_start(now, -3)
    with db(app):
        add_events(std_site.site.id, *[old_month + timedelta(hours=h) for h in range(7)])
        add_events(std_site.site.id, kept_month, datetime(1990, 1, 1), now)
        partitions.ensure()
        assert Month(old_month) in partitions.monthly_partitions()
        deleted = prune.prune(prune.PruneCutoffs(cutoff, now - timedelta(days=30),
                                                            now.date()))
        assert Month(old_month) not in partitions.monthly_partitions()  # dropped, not emptied
        assert Month(kept_month) in partitions.monthly_partitions()
        assert deleted["event"] == 7 + 1  # the month's 7 rows and 1990's row from the default
        assert sorted(e.occurred_at for e in Event.select()) == [kept_month, now]


@postgres_only
def test_a_drop_gives_up_on_a_busy_table_instead_of_queueing_ingest(app, std_site,
                                                                      monkeypatch):
    """A DROP waiting for a long reader would make every insert queue behind it: it waits
    LOCK_TIMEOUT at most, is retried, and finally fails, leaving ingest alone."""
    monkeypatch.setattr(partitions, "DDL_ATTEMPTS", 2)
    monkeypatch.setattr(partitions, "LOCK_TIMEOUT", "100ms")
    old_month = month_start(utcnow(), -6)
    with db(app):
        add_events(std_site.site.id, old_month)
        partitions.ensure()
    reader = psycopg2_connection(app)
    try:
        reader.cursor().execute("BEGIN; SELECT count(*) FROM event")  # holds its lock
        with db(app), pytest.raises(OperationalError, match="lock timeout"):
            partitions.drop_months_before(month_start(utcnow(), -1))
    finally:
        reader.rollback()
        reader.close()
    with db(app):
        assert Month(old_month) in partitions.monthly_partitions()
        assert partitions.drop_months_before(month_start(utcnow(), -1))[old_month.strftime(
            "event_%Y_%m")] == 1


def psycopg2_connection(app):
    import psycopg2

    return psycopg2.connect(app.config["DATABASE_URL"])


@postgres_only
def test_a_batch_across_partitions_is_stored_exactly_once(client, app, std_site):
    oldest = now_ms() - 400 * 86_400_000  # in the DEFAULT partition unless its month has one
    body = orjson.dumps(batch([event(timestamp=oldest), event(), event(timestamp=now_ms() - 1)]))
    first = post_json(client, "/api/events", body, std_site.write_headers())
    again = post_json(client, "/api/events", body, std_site.write_headers())
    assert first.get_json() == {"success": True, "count": 3}
    assert again.get_json() == {"success": True, "count": 3, "duplicate": True}
    with db(app):
        oldest_row = Event.select(fn.MIN(Event.occurred_at)).scalar()
    assert sorted(partition_of_rows(app).values()) == sorted([
        partition_for(app, oldest_row), f"{utcnow():event_%Y_%m}", f"{utcnow():event_%Y_%m}"])


# --- analytics queries read only their period's partitions ----------------------------------

def _partitions_read(plan: list[str]) -> set[str]:
    found = set()
    for line in plan:
        for word in line.replace("(", " ").split():
            if word == partitions.DEFAULT_PARTITION or partitions.MONTHLY.fullmatch(word):
                found.add(word)
    return found


@postgres_only
def test_every_analytics_query_reads_only_its_periods_partitions(app, std_site, caplog):
    now = utcnow()
    this_month = month_start(now)
    with db(app):
        add_events(std_site.site.id, *(month_start(now, -n) + timedelta(hours=1)
                                       for n in range(3)))
        partitions.ensure()
        # merged before the reads: a merge reads its id range in every partition
        merging.merge()
    period = {"from": this_month.date().isoformat(), "to": date.today().isoformat()}
    client = app.test_client()
    headers = {**std_site.server_headers(), "Accept": "application/json"}
    with caplog.at_level(logging.DEBUG, logger="peewee"):
        for tool, arguments in (
                ("get_overview", {}), ("get_revenue", {}), ("get_web_vitals", {}),
                ("get_errors", {}),
                ("query", {"metrics": ["events"], "dimensions": ["time:day"]}),
                ("query", {"metrics": ["pageviews", "visitors"], "dimensions": ["event:page"],
                           "filters": [["is", "event:type", ["pageview"]]]}),
                ("query", {"metrics": ["visits"], "dimensions": ["visit:source"]}),
                ("query", {"metrics": ["events", "visits", "conversion_rate"],
                           "dimensions": ["event:goal"]})):
            response = client.post("/api/mcp", headers=headers, json={
                "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": tool, "arguments": {**period, **arguments}}})
            assert response.get_json()["result"]["isError"] is False, tool
    statements = [record.msg for record in caplog.records
                  if isinstance(record.msg, tuple) and '"event"' in record.msg[0]
                  and record.msg[0].lstrip().upper().startswith(("SELECT", "WITH"))]
    assert len(statements) >= 6  # the others read the rollups only
    # The revenue attribution looks back ATTRIBUTION_LOOKBACK_DAYS; nothing else does.
    earliest = month_start(this_month - timedelta(days=ATTRIBUTION_LOOKBACK_DAYS))
    allowed = {Month(month_start(earliest, n)).name for n in range(3)
               if month_start(earliest, n) <= this_month}
    only_this_month = 0
    with db(app):
        for sql, params in statements:
            plan = [row[0] for row in database.execute_sql("EXPLAIN " + sql, params)]
            read = _partitions_read(plan)
            assert read and read <= allowed, (read, sql)
            only_this_month += read == {Month(this_month).name}
    assert only_this_month >= len(statements) - 2


# --- the migration, on a database that already has events ------------------------------------

@pytest.fixture
def populated_before_partitions(make_app):
    """A fresh PostgreSQL database migrated up to 0003, with events in it."""
    if BACKEND != "postgres":
        pytest.skip("partitions are PostgreSQL's")
    name = f"egis_partition_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    _admin(f"CREATE DATABASE {name}")
    app = make_app(DATABASE_URL=f"{PG_ADMIN_URL.rsplit('/', 1)[0]}/{name}")
    try:
        with db(app):
            Runner(database.obj, directory=MIGRATIONS_DIR).up(target="0003_partial_user_index")
            now = utcnow()
            add_events(1, month_start(now, -2), now, datetime(1970, 1, 1), month_start(now, 1))
        yield app
    finally:
        release_connections()
        _admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_the_migration_keeps_every_row_and_its_id(populated_before_partitions):
    app = populated_before_partitions
    before = sorted(partition_of_rows(app))
    result = app.test_cli_runner().invoke(args=["db", "upgrade"])
    later = sorted(name[:-3] for name in os.listdir(MIGRATIONS_DIR)
                   if name[0].isdigit() and name[:4] > "0004")
    assert result.stdout.strip() == "Applied: " + ", ".join(["0004_event_partitions", *later]), \
        result.output
    where = partition_of_rows(app)
    assert sorted(where) == before
    now = utcnow()
    assert sorted(where.values()) == sorted([f"{month_start(now, -2):event_%Y_%m}",
                                             f"{now:event_%Y_%m}", "event_default",
                                             f"{month_start(now, 1):event_%Y_%m}"])
    with db(app):
        add_events(1, now)  # the id sequence carried over
    assert max(partition_of_rows(app)) == max(before) + 1
    with db(app):
        Runner(database.obj, directory=MIGRATIONS_DIR).down(target="0004_event_partitions")
        (kind,) = database.execute_sql(
            "SELECT relkind FROM pg_class WHERE relname = 'event'").fetchone()
    assert kind == "r" and len(partition_of_rows(app)) == len(before) + 1
