"""What a merge of the rollups costs (app.rollups.merging): the time one `merging.merge()` takes
for the events stored since the last one, against the merge that finds nothing to do, in one run.

    python -m bench.maintenance.rollup_merge [--base 200000] [--tails 1000 10000 50000]
                                             [--rounds 3] [--sqlite FILE]

A read of the agent surface merges first, so under ingest an answer waits for the events
stored since the last merge: a worker's timer merges EGIS_ROLLUP_MERGE_SECONDS (2 s) after it
stored events, so a read finds at most about that long of ingest waiting, 2,000 events at 1,000
events/s. The benchmark seeds `--base` events of realistic visits into a database of its own
(bench.harness.seed's; PostgreSQL, or with --sqlite a SQLite file; dropped at the end) and
derives their rollups, then, round after round, for each tail size, stores that many more
events of the next hours' visits (COPY, as the seeding does) and times the merge that takes
them; before each, the merge with nothing to do (one query when no event is newer than the
mark), its baseline. Prints each tail's milliseconds and microseconds per event, range and
median over the rounds, and the ratio to the no-op merge of the same round.
"""
import argparse
import random
import statistics
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.harness.database import admin, database_url, run_database
from bench.harness.seed import DOMAIN, PostgresSink, SqliteSink, create_sites, upgrade
from bench.harness.visits import events


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=int, default=200_000, help="events seeded first")
    parser.add_argument("--tails", type=int, nargs="+", default=[1_000, 10_000, 50_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sqlite", metavar="FILE", help="a SQLite file instead of PostgreSQL")
    return parser.parse_args()


def timed(call: Any) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    args = parse_args()
    name = run_database("rollup_merge")
    url = f"sqlite:///{args.sqlite}" if args.sqlite else database_url(name)
    if args.sqlite:
        Path(args.sqlite).unlink(missing_ok=True)
    else:
        admin(f"CREATE DATABASE {name}")
    try:
        measure(args, url)
    finally:
        from app.storage.db import release_connections

        release_connections()
        if args.sqlite:
            Path(args.sqlite).unlink(missing_ok=True)
        else:
            admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def measure(args: argparse.Namespace, url: str) -> None:
    from app.rollups import merging
    from app.rollups.mark import mark
    from app.storage import partitions
    from app.storage.db import is_postgres, release_connections
    from models import database

    app = upgrade(url)
    rng, now = random.Random(20261127), datetime.utcnow() - timedelta(days=30)
    site_id, _ = create_sites(app, None)

    def store(count: int, days: int, prefix: str) -> int:
        """Store about `count` events of new visits (session ids of their own) before `now`."""
        release_connections()
        sink = SqliteSink(args.sqlite) if args.sqlite else PostgresSink(url)
        rows = ((event, page, (visit[0], prefix + visit[1], *visit[2:]))
                for event, page, visit in events(rng, site_id, DOMAIN, count, days, now))
        stored = sink.events(rows)
        sink.finish()
        return stored

    with app.app_context(), database.connection_context():
        if is_postgres():
            partitions.ensure(now - timedelta(days=30))
    seeded = store(args.base, 28, "base-")
    with app.app_context(), database.connection_context():
        merging.rebuild()
    backend = "SQLite" if args.sqlite else "PostgreSQL"
    print(f"seeded {seeded:,} events and their rollups ({backend})")
    results: dict[int, list[tuple[float, float, int]]] = {tail: [] for tail in args.tails}
    for round_number in range(args.rounds):
        for tail in args.tails:
            now += timedelta(hours=6)
            with app.app_context(), database.connection_context():
                idle = statistics.median(timed(merging.merge) for _ in range(5))
            stored = store(tail, 1, f"r{round_number}-{tail}-")
            with app.app_context(), database.connection_context():
                before = mark()
                spent = timed(merging.merge)
                assert mark() > before, "the merge took no event"
            results[tail].append((spent, idle, stored))
    print("\n| events waiting | merge (ms) | µs per event | vs the no-op merge |")
    print("|---:|---:|---:|---:|")
    for tail, runs in results.items():
        spent = [run[0] for run in runs]
        per_event = [run[0] * 1000 / run[2] for run in runs]
        ratios = [run[0] / run[1] for run in runs]
        print(f"| {tail:,} | {span(spent, '.0f')} | {span(per_event, '.1f')} | "
              f"{span(ratios, ',.0f')} |")
    idles = [run[1] for runs in results.values() for run in runs]
    print(f"\nthe no-op merge: {span(idles, '.2f')} ms")


def span(values: list[float], spec: str) -> str:
    return (f"{min(values):{spec}}–{max(values):{spec}} "
            f"(median {statistics.median(values):{spec}})")


if __name__ == "__main__":
    main()
