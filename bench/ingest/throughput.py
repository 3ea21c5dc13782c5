"""Ingest benchmark: a real WSGI server + PostgreSQL, loaded by wrk, on this machine.

    python -m bench.ingest.throughput [--server gunicorn|granian] [--workers N] [--duration 20]
        [--connections 16] [--rate-limit-storage redis://127.0.0.1:6379]

Creates a database of its own (egis_bench_<pid>, dropped at the end), a site with an unlimited
quota and a write key, starts gunicorn with deploy/gunicorn.conf.py (or granian with
deploy/granian_server.py, in the same process shape), on a free port with no proxy in front, and
measures in one run:
  * GET /healthz (the no-op baseline: the server + Flask, no database),
  * POST /api/events with 50-event batches, 5-event gzip-compressed batches (the tracker's
    usual request) and 1-event batches, each sent as a browser's (Origin, a current browser's
    User-Agent, client hints, Accept-Language, an X-Forwarded-For client address, the
    fingerprint's screenWidth: the visit context is derived) unless --backend says otherwise,
counting events actually stored in PostgreSQL (not responses) per second, and each worker's
peak resident memory. Needs wrk (apt-get install wrk). Prints a Markdown table with the
ratios to the no-op baseline. The rate limits count in each worker's memory unless
--rate-limit-storage names the Redis the deployment uses (deploy/egis.service), whose client
library and round trips are then measured too (keys under a prefix of this run's own).
"""
import argparse
import os
import shutil
import tempfile
import time
import uuid

from bench.harness.database import admin, create_bench_site, database_url, run_database
from bench.harness.load import load_arguments, measure_loads
from bench.harness.servers import bench_env, free_ports, serving, start_server, worker_memory_mib

DB_NAME = run_database("bench")
DB_URL = database_url(DB_NAME)


def main() -> None:
    parser = argparse.ArgumentParser()
    load_arguments(parser)
    parser.add_argument("--server", choices=("gunicorn", "granian"), default="gunicorn")
    parser.add_argument("--commit-delay", type=int, default=0,
                        help="PostgreSQL commit_delay (microseconds) for the bench database, "
                             "with commit_siblings 1")
    parser.add_argument("--rate-limit-storage", default="memory://",
                        help="where the rate limits count (EGIS_RATELIMIT_STORAGE_URI)")
    parser.add_argument("--backend", action="store_true",
                        help="send the batches as a backend does (no Origin, no browser "
                             "headers): no visit context")
    args = parser.parse_args()

    [port] = free_ports(1)
    env = {**bench_env(DB_URL, port, args.workers, args.worker_threads),
           "EGIS_RATELIMIT_STORAGE_URI": args.rate_limit_storage,
           "EGIS_RATELIMIT_KEY_PREFIX": f"egis-bench-{uuid.uuid4().hex[:8]}"}
    key = create_bench_site(DB_NAME, env, args.commit_delay)
    scratch = tempfile.mkdtemp(prefix="egis-bench-")
    try:
        with serving(start_server(args.server, env, port, args, scratch)) as server:
            time.sleep(2)  # let every worker finish warming up
            rows = measure_loads(port, key, DB_URL, args, scratch)
            memory = worker_memory_mib(server.pid)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        admin(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")

    print(f"\n{args.workers} {args.server} workers x {args.worker_threads} threads, "
          f"wrk -t{args.threads} -c{args.connections} -d{args.duration}s, "
          f"{os.cpu_count()} cores shared by wrk, {args.server} and PostgreSQL, "
          f"commit_delay {args.commit_delay} us, rate limits in {args.rate_limit_storage}\n")
    print(f"| endpoint | requests/s | vs no-op | stored events/s | p99 | non-2xx "
          f"| CPU ms/request: {args.server} / PostgreSQL / wrk | machine busy |")
    print("|---|---|---|---|---|---|---|---|")
    noop = rows[0][3]
    for name, rps, stored, result in rows:
        stored_text = f"{stored:,.0f}" if stored is not None else "-"
        cpu = result["cpu"]
        print(f"| {name} | {rps:,.0f} | {rps / noop['rps']:.2f} | {stored_text} | "
              f"{result['p99']} | {result['non2xx']} | {cpu[args.server]:.2f} / "
              f"{cpu['postgres']:.2f} / {cpu['wrk']:.2f} | {result['busy']:.0%} |")
    print("\nper worker, MiB (peak RSS / PSS / unique at the end): " + ", ".join(
        f"{worker['peak_rss']:.1f} / {worker['pss']:.0f} / {worker['uss']:.0f}"
        for worker in memory))


if __name__ == "__main__":
    main()
