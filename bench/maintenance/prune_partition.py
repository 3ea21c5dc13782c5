"""Retention benchmark: prune a month of N events (default 5 million) from the partitioned event
table, as `flask data prune` does, and compare with deleting rows.

    python -m bench.maintenance.prune_partition [--events 5000000] [--runs 3]
                                                [--compare-delete 200000]

Each run creates the database egis_prune_bench_<pid>, migrates it (`upgrade_schema`: the
partitions of this month and the next ones), puts N events into one month six months back (its own
partition) and 100,000 into this month, then times `app.retention.prune` with the cutoff five months
back: the old month's partition is counted and dropped, the rest of the tables are swept by
batched DELETEs (nothing to find in them). Rows go in with INSERT ... SELECT generate_series, on
the server. `--compare-delete M` also times deleting M rows of one month row by row
(`app.retention.deletes.delete_where`, what an unpartitioned table needs), to scale against.
"""
import argparse
import statistics
import time
from datetime import timedelta

from bench.harness.database import admin, database_url, run_database

DB_NAME = run_database("prune_bench")
DB_URL = database_url(DB_NAME)
RECENT_EVENTS = 100_000


def seed(database, start, count: int) -> None:
    """`count` page views spread over the 28 days from `start`, in one statement."""
    database.execute_sql(
        "INSERT INTO event (site_id, session_id, anonymous_id, type, page_url, occurred_at, "
        "received_at, weight) "
        "SELECT 1, 's' || (n / 20), 'a' || (n / 60), 'pageview', "
        "'https://bench.example/page/' || (n %% 500), t, t, 1 "
        "FROM generate_series(1, %s) AS n, "
        "LATERAL (SELECT %s::timestamp + (n %% 2419200) * interval '1 second') AS at(t)",
        (count, start))


def fresh_database():
    from app import create_app
    from app.cli.db import upgrade_schema
    from app.storage.db import release_connections

    release_connections()
    admin(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
    admin(f"CREATE DATABASE {DB_NAME}")
    create_app({"DATABASE_URL": DB_URL})
    upgrade_schema()


def one_run(events: int) -> tuple[float, int]:
    from app.retention import prune
    from app.storage import partitions
    from app.storage.partitions import month_start
    from models import database
    from models.site import utcnow

    fresh_database()
    now = utcnow()
    old_month = month_start(now, -6)
    with database.connection_context():
        database.execute_sql("SET statement_timeout = 0")  # seeding runs long
        database.execute_sql(  # one row gives the old month its partition, as history would
            "INSERT INTO event (site_id, type, occurred_at, received_at, weight) "
            "VALUES (1, 'pageview', %s, %s, 1)", (old_month, old_month))
        partitions.ensure()
        with database.atomic():
            seed(database, old_month, events - 1)
            seed(database, month_start(now), RECENT_EVENTS)
        database.execute_sql("VACUUM ANALYZE event")
        database.execute_sql("CHECKPOINT")
        cutoffs = prune.PruneCutoffs(month_start(now, -5), now - timedelta(days=30),
                                           now.date())
        started = time.perf_counter()
        deleted = prune.prune(cutoffs)
        seconds = time.perf_counter() - started
        (left,) = database.execute_sql("SELECT count(*) FROM event").fetchone()
    assert left == RECENT_EVENTS, left
    return seconds, deleted["event"]


def delete_rows(rows: int) -> float:
    from app.retention import deletes
    from app.storage.partitions import month_start
    from models import Event, database
    from models.site import utcnow

    fresh_database()
    old_month = month_start(utcnow(), -6)
    with database.connection_context():
        database.execute_sql("SET statement_timeout = 0")
        seed(database, old_month, rows)  # no partition for it: the DEFAULT one, a plain table
        database.execute_sql("VACUUM ANALYZE event")
        database.execute_sql("CHECKPOINT")
        started = time.perf_counter()
        deleted = deletes.delete_where(Event, Event.occurred_at < month_start(utcnow(), -5))
        seconds = time.perf_counter() - started
    assert deleted == rows
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--compare-delete", type=int, default=0, metavar="ROWS")
    args = parser.parse_args()
    try:
        timings = []
        for run in range(1, args.runs + 1):
            seconds, dropped = one_run(args.events)
            assert dropped == args.events, dropped
            timings.append(seconds)
            print(f"run {run}: pruned a month of {dropped:,} events in {seconds:.2f} s",
                  flush=True)
        print(f"prune, {args.events:,} events: {min(timings):.2f} – {max(timings):.2f} s "
              f"(median {statistics.median(timings):.2f} s, {args.runs} runs)")
        if args.compare_delete:
            seconds = delete_rows(args.compare_delete)
            print(f"row-by-row delete of {args.compare_delete:,} events: {seconds:.2f} s "
                  f"({args.compare_delete / seconds:,.0f} rows/s)")
    finally:
        from app.storage.db import release_connections

        release_connections()
        admin(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")


if __name__ == "__main__":
    main()
