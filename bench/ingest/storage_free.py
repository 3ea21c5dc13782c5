"""What deriving the ids of storage-free batches costs (app/tracking/anonymous.py).

    python -m bench.ingest.storage_free [--server gunicorn|granian] [--workers 2] [--duration 10]
                                 [--runs 3]

With a database of its own and a site as bench.ingest.throughput makes them, this starts the server
(as deployed, behind one trusted proxy: EGIS_TRUSTED_PROXIES=1) and, `--runs` times in turn,
measures the no-op, new 1-event batches with the tracker's own ids, and new 1-event
storage-free batches ("-" ids: one visitor hash, the salt from the worker's cache, one upsert of
the visitor's row) from 1,000 visitors taking turns and from one visitor (a backend posting
"-" for everyone: one row that every request updates). Prints each load's rate and its ratio
to the no-op of the same run, as a range over the runs. Needs wrk.
"""
import argparse
import shutil
import tempfile
import time
from pathlib import Path

from bench.harness.database import admin, create_bench_site, database_url, run_database
from bench.harness.load import load_arguments, post_batches, spread, wrk
from bench.harness.servers import bench_env, free_ports, serving, start_server

DB_NAME = run_database("bench")
DB_URL = database_url(DB_NAME)
SCRIPT = str(Path(__file__).with_name("storage_free.lua"))
LOADS = ("GET /healthz (no-op)", "1-event batches, own ids", "1-event batches, \"-\" ids, "
         "1,000 visitors", "1-event batches, \"-\" ids, one visitor")


def storage_free(port: int, key: str, args: argparse.Namespace, visitors: int) -> dict:
    return wrk("/api/events", args.duration, args.connections, args.threads,
                      {"EGIS_KEY": key, "EGIS_VISITORS": str(visitors),
                       "EGIS_RUN": str(time.time_ns())},
                      SCRIPT, port=port, database=DB_NAME)


def one_run(port: int, key: str, args: argparse.Namespace, scratch: str) -> list[dict]:
    noop = wrk("/healthz", args.duration, args.connections, args.threads, port=port)
    own_ids = post_batches(port, key, DB_URL, args, scratch, 1, False)[3]
    return [noop, own_ids, storage_free(port, key, args, 1000), storage_free(port, key, args, 1)]


def main() -> None:
    parser = argparse.ArgumentParser()
    load_arguments(parser)
    parser.add_argument("--server", choices=("gunicorn", "granian"), default="gunicorn")
    parser.add_argument("--runs", type=int, default=3)
    parser.set_defaults(workers=2, duration=10)
    args = parser.parse_args()
    [port] = free_ports(1)
    env = {**bench_env(DB_URL, port, args.workers, args.worker_threads),
           "EGIS_TRUSTED_PROXIES": "1"}
    key = create_bench_site(DB_NAME, env)
    scratch = tempfile.mkdtemp(prefix="egis-bench-")
    try:
        with serving(start_server(args.server, env, port, args, scratch)):
            time.sleep(2)  # let every worker finish warming up
            runs = [one_run(port, key, args, scratch) for _ in range(args.runs)]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        admin(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")

    print(f"\n{args.workers} {args.server} workers x {args.worker_threads} threads, "
          f"wrk -t{args.threads} -c{args.connections} -d{args.duration}s, {args.runs} runs\n")
    print("| load | requests/s | vs no-op | non-2xx |")
    print("|---|---|---|---|")
    for index, name in enumerate(LOADS):
        results = [run[index] for run in runs]
        ratios = [run[index]["rps"] / run[0]["rps"] for run in runs]
        print(f"| {name} | {spread([r['rps'] for r in results])} | "
              f"{spread(ratios, '{:.2f}')} | {sum(r['non2xx'] for r in results)} |")


if __name__ == "__main__":
    main()
