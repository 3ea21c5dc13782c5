"""Growth benchmark: the 5-event ingest rate while the event table grows from empty to 10 M rows.

    python -m bench.maintenance.growth [--duration 10] [--steps 0,1000000,5000000,10000000]
                                       [--runs 1] [--port N]

Each run creates the database egis_growth_bench_<pid>, migrates it, creates (through the `flask`
CLI, as bench.ingest.throughput does) a pro site with a quota out of reach, a second site as
noise and a write key, and gives the event table its monthly partitions back three months.
Then, for each step, it tops the event table up to the step's size and measures:
  * seeding: one INSERT ... SELECT generate_series on the server, in 5-event batches: a batch
    row each, with a random UUID key as the tracker sends (so the batch table's unique index
    grows as in production), 9 in 10 for the site and 1 in 10 for the noise site, at random
    times over the last 90 days (four monthly partitions), inserted in time order, with the
    monthly usage counters; then VACUUM ANALYZE and CHECKPOINT, so that neither autovacuum nor
    the seed's checkpoint runs during the measurement;
  * gunicorn, started afresh for the step with deploy/gunicorn.conf.py and bench.ingest.throughput's
    settings (one worker per core x 4 threads, rate limits out of reach);
  * wrk -t2 -c16 for --duration seconds: GET /healthz (the no-op baseline), then POST
    /api/events with 5-event gzip batches (bench/harness/ingest.lua, random UUID batch ids),
    counting the rows that reach the event table.
Prints a Markdown table, one row per step (ranges over --runs runs, each on a fresh database),
with the on-disk size of the event table and of the batch key index, and per stored batch the
blocks the database read from outside shared_buffers (pg_stat_database) and the WAL written
(pg_stat_wal: the whole server's, so another database's writes would count too); then drops the
database. Needs wrk (apt-get install wrk).
"""
import argparse
import os
import shutil
import tempfile
import time
import uuid
from datetime import datetime

import psycopg2

from bench.harness.batches import write_gzip_bodies
from bench.harness.database import admin, database_url, run_database, stored_events
from bench.harness.load import INGEST_SCRIPT, spread, wrk
from bench.harness.servers import (
    bench_env,
    flask,
    free_ports,
    serving,
    start_gunicorn,
    worker_memory_mib,
)

DB_NAME = run_database("growth_bench")
DB_URL = database_url(DB_NAME)
DOMAIN, NOISE_DOMAIN = "bench.example", "noise.example"
PER_BATCH = 5
SEED_DAYS = 90
CONNECTIONS, THREADS = 16, 2  # wrk, as bench.ingest.throughput's defaults

SEED = """
WITH batches AS (
    INSERT INTO batch (site_id, batch_key, event_count, received_at)
    SELECT CASE WHEN random() < 0.1 THEN %(noise)s ELSE %(site)s END, gen_random_uuid()::text,
           %(per_batch)s, %(now)s - random() * %(days)s * interval '1 day' AS at
    FROM generate_series(1, %(batches)s)
    ORDER BY at
    RETURNING id, site_id, received_at
), counted AS (
    INSERT INTO usage (site_id, period, shard, events)
    SELECT site_id, to_char(received_at, 'YYYY-MM'), id %% 16, %(per_batch)s * count(*)
    FROM batches GROUP BY 1, 2, 3
    ON CONFLICT (site_id, period, shard) DO UPDATE SET events = usage.events + EXCLUDED.events
)
INSERT INTO event (site_id, batch_id, session_id, anonymous_id, user_id, type, page_url,
                   page_title, referrer, properties, client_ts, sent_ts, occurred_at,
                   received_at, weight)
SELECT b.site_id, b.id, 's' || b.id / 4, 'a' || b.id / 12,
       CASE WHEN b.id %% 10 = 0 THEN 'u' || b.id %% 20000 END,
       (ARRAY['pageview', 'heartbeat', 'scroll', 'click', 'performance'])[k %% 5 + 1],
       'https://' || s.domain || '/page/' || b.id %% 500, 'Page ' || b.id %% 500,
       'https://www.google.com/', jsonb_build_object('i', k),
       sent.ms - (%(per_batch)s - k) * 1000, sent.ms,
       b.received_at - (%(per_batch)s - k) * interval '1 second', b.received_at, 1
FROM batches AS b JOIN site AS s ON s.id = b.site_id,
     LATERAL (SELECT (extract(epoch FROM b.received_at) * 1000)::bigint) AS sent(ms),
     generate_series(0, %(per_batch)s - 1) AS k
"""


def prepare(port: int) -> tuple[dict[str, str], str]:
    """A fresh database with the sites, a write key and partitions for the seeded months;
    returns gunicorn's environment and the key."""
    from app import create_app
    from app.storage import partitions
    from app.storage.db import release_connections
    from models import database

    admin(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
    admin(f"CREATE DATABASE {DB_NAME}")
    env = bench_env(DB_URL, port, os.cpu_count(), 4)
    flask("db", "upgrade", env=env)
    flask("sites", "create", DOMAIN, "--plan", "pro", "--monthly-quota", "2000000000", env=env)
    flask("sites", "create", NOISE_DOMAIN, "--plan", "pro", env=env)
    key = flask("keys", "create", DOMAIN, "--kind", "write", env=env).splitlines()[-1]
    create_app({"DATABASE_URL": DB_URL})
    with database.connection_context():  # `flask db upgrade` made this month and the next ones
        partitions.ensure(partitions.month_start(datetime.utcnow(), -3))
    release_connections()
    return env, key


def seed(target: int) -> dict[str, float]:
    """Top the event table up to about `target` rows; seconds spent, and the sizes it reached."""
    connection = psycopg2.connect(DB_URL)
    connection.autocommit = True
    cursor = connection.cursor()
    cursor.execute("SELECT domain, id FROM site")
    sites = dict(cursor.fetchall())
    started = time.perf_counter()
    batches = max(target - stored_events(DB_URL), 0) // PER_BATCH
    if batches:
        cursor.execute(SEED, {"site": sites[DOMAIN], "noise": sites[NOISE_DOMAIN],
                              "per_batch": PER_BATCH, "batches": batches,
                              "now": datetime.utcnow(), "days": SEED_DAYS})
    inserted = time.perf_counter()
    cursor.execute("VACUUM ANALYZE event, batch, usage")
    cursor.execute("CHECKPOINT")
    settled = time.perf_counter()
    cursor.execute("SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('event')")
    (event_bytes,) = cursor.fetchone()
    cursor.execute("SELECT pg_relation_size('batch_site_id_batch_key')")
    (key_index_bytes,) = cursor.fetchone()
    connection.close()
    return {"seed": inserted - started, "settle": settled - inserted,
            "event_gib": event_bytes / 2**30, "key_index_mib": key_index_bytes / 2**20}


def reads_and_wal() -> tuple[int, int]:
    """Blocks this database has read from outside shared_buffers; WAL bytes of the server."""
    connection = psycopg2.connect(DB_URL)
    cursor = connection.cursor()
    cursor.execute("SELECT blks_read, (SELECT wal_bytes FROM pg_stat_wal) FROM pg_stat_database "
                   "WHERE datname = current_database()")
    (blocks, wal) = cursor.fetchone()
    connection.close()
    return blocks, int(wal)


def measure(env: dict[str, str], key: str, port: int, duration: int,
            scratch: str) -> dict[str, float]:
    """The no-op and the 5-event gzip batches, on a gunicorn started for this step."""
    run = uuid.uuid4().hex[:8]
    script_env = {"EGIS_KEY": key, "EGIS_EVENTS": str(PER_BATCH), "EGIS_RUN": run,
                  "EGIS_WRK_THREADS": str(THREADS),
                  **write_gzip_bodies(scratch, duration * 8000, PER_BATCH, run, uuid_ids=True)}
    with serving(start_gunicorn(env, port)) as server:
        time.sleep(2)  # let every worker finish warming up
        noop = wrk("/healthz", duration, CONNECTIONS, THREADS, port=port, database=DB_NAME)
        rows = stored_events(DB_URL)
        reads, wal = reads_and_wal()
        started = time.monotonic()
        events = wrk("/api/events", duration, CONNECTIONS, THREADS, script_env,
                     INGEST_SCRIPT, port=port, database=DB_NAME)
        elapsed = time.monotonic() - started
        rss = max(worker["peak_rss"] for worker in worker_memory_mib(server.pid))
    time.sleep(1)  # the workers' backends report their statistics as they exit
    reads_after, wal_after = reads_and_wal()  # before counting: the count reads blocks too
    stored = stored_events(DB_URL) - rows
    batches = max(stored / PER_BATCH, 1)
    return {"rows": rows, "noop_rps": noop["rps"], "noop_p99": noop["p99_ms"],
            "rps": events["rps"], "ratio": events["rps"] / noop["rps"],
            "stored": stored / elapsed, "p99": events["p99_ms"],
            "non2xx": events["non2xx"] + noop["non2xx"], "rss": rss,
            "reads": (reads_after - reads) / batches, "wal_kib": (wal_after - wal) / batches / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk measurement")
    parser.add_argument("--steps", default="0,1000000,5000000,10000000",
                        help="event table sizes to measure at, in order")
    parser.add_argument("--runs", type=int, default=1, help="whole runs, each from empty")
    parser.add_argument("--port", type=int, default=free_ports(1)[0],
                        help="for gunicorn (default: a free one)")
    args = parser.parse_args()
    steps = [int(step) for step in args.steps.split(",")]

    results: list[list[dict[str, float]]] = [[] for _ in steps]
    scratch = tempfile.mkdtemp(prefix="egis-growth-")
    try:
        for run in range(1, args.runs + 1):
            env, key = prepare(args.port)
            for number, step in enumerate(steps):
                result = seed(step) | measure(env, key, args.port, args.duration, scratch)
                results[number].append(result)
                print(f"run {run}, {result['rows']:,} events: seeded in {result['seed']:.1f} s "
                      f"(+ {result['settle']:.1f} s VACUUM ANALYZE, CHECKPOINT); no-op "
                      f"{result['noop_rps']:,.0f}/s, 5-event gzip {result['rps']:,.0f}/s "
                      f"({result['ratio']:.2f}), {result['stored']:,.0f} events/s stored",
                      flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        admin(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")

    print(f"\n{os.cpu_count()} gunicorn workers x 4 threads, restarted at each step; "
          f"wrk -t{THREADS} -c{CONNECTIONS} -d{args.duration}s; {os.cpu_count()} cores shared "
          f"by wrk, gunicorn and PostgreSQL; {args.runs} run(s), ranges over the runs\n")
    print("| events in table | seed (s) | VACUUM ANALYZE + CHECKPOINT (s) | no-op requests/s "
          "| 5-event gzip requests/s | vs no-op | stored events/s | p99 no-op / 5-event (ms) "
          "| non-2xx | event table + indexes (GiB) | batch key index (MiB) "
          "| blocks read per batch | WAL per batch (KiB) | peak worker RSS (MiB) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    columns = (("rows", "{:,.0f}"), ("seed", "{:.0f}"), ("settle", "{:.0f}"),
               ("noop_rps", "{:,.0f}"), ("rps", "{:,.0f}"), ("ratio", "{:.2f}"),
               ("stored", "{:,.0f}"), ("noop_p99", "{:.0f}"), ("p99", "{:.0f}"),
               ("non2xx", "{:.0f}"), ("event_gib", "{:.2f}"), ("key_index_mib", "{:.0f}"),
               ("reads", "{:.2f}"), ("wal_kib", "{:.1f}"), ("rss", "{:.0f}"))
    for step in results:
        cells = [spread([result[name] for result in step], pattern)
                 for name, pattern in columns]
        cells[7:9] = [f"{cells[7]} / {cells[8]}"]
        print(f"| {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
