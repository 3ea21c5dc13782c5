"""The floor under a stored small batch: issue 9's targets against the most that a Python WSGI
app storing batches durably can do on this machine.

    python -m bench.ingest.floor [--workers 3] [--duration 10] [--runs 3]

With a database and a site as bench.ingest.throughput makes them, each run serves in turn, in
the same shape (granian, `--workers` x `--worker-threads`, no proxy): egis as deployed
(deploy/granian_server.py), then bench/ingest/floor_app.py's two apps, which only parse a batch and
store it with egis's statement through egis's group writer, one with Flask and one without a
framework. Each is loaded with wrk as bench.ingest.throughput does: GET /healthz, then new
5-event gzip batches and new 1-event batches, each rate also given as a ratio to egis's no-op
of the same run. The floor apps keep the durable part of the contract (synchronous commit,
exactly-once batch ids, the quota's usage row) and nothing else, so what they store is an upper
bound for egis on this stack and machine. Needs wrk.
"""
import argparse
import shutil
import subprocess
import sys
import tempfile
import time

import psycopg2

from bench.harness import ROOT
from bench.harness.database import admin, create_bench_site, database_url, run_database
from bench.harness.load import load_arguments, post_batches, wrk
from bench.harness.servers import bench_env, free_ports, serving, start_server, wait_for

DB_NAME = run_database("bench")
DB_URL = database_url(DB_NAME)


def start_floor(factory: str, env: dict[str, str], port: int,
                args: argparse.Namespace) -> subprocess.Popen:
    """One of bench/ingest/floor_app.py's apps (`factory`) under granian, in the shape
    deploy/granian_server.py gives egis."""
    server = subprocess.Popen(
        [sys.executable, "-m", "granian", "--interface", "wsgi", "--no-ws", "--http", "1",
         "--host", "127.0.0.1", "--port", str(port), "--workers", str(args.workers),
         "--blocking-threads", str(args.worker_threads), "--log-level", "warning",
         "--factory", f"bench.ingest.floor_app:{factory}"],
        cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)})
    wait_for(f"http://127.0.0.1:{port}/healthz")
    return server


def site_id() -> int:
    connection = psycopg2.connect(DB_URL)
    try:
        cursor = connection.cursor()
        cursor.execute("SELECT id FROM site")
        (found,) = cursor.fetchone()
        return found
    finally:
        connection.close()


LOADS = ((5, True), (1, False))  # events per batch, gzip-compressed: the tracker's batches


def loads(port: int, key: str, args: argparse.Namespace, scratch: str) -> list[dict]:
    """The no-op, then each of LOADS flat out, against the server on `port`."""
    noop = wrk("/healthz", args.duration, args.connections, args.threads, port=port)
    rows = [{"load": "GET /healthz", "stored": None, **noop}]
    for per_batch, compressed in LOADS:
        label, _rps, stored, result = post_batches(port, key, DB_URL, args, scratch,
                                                          per_batch, compressed)
        rows.append({"load": label, "stored": stored, **result})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    load_arguments(parser)
    parser.add_argument("--runs", type=int, default=3)
    parser.set_defaults(workers=3, duration=10)
    args = parser.parse_args()
    [port] = free_ports(1)
    env = bench_env(DB_URL, port, args.workers, args.worker_threads)
    key = create_bench_site(DB_NAME, env)
    floor_env = {**env, "EGIS_FLOOR_SITE_ID": str(site_id())}
    scratch = tempfile.mkdtemp(prefix="egis-bench-")
    results = []  # (run, server, rows)
    try:
        for run in range(1, args.runs + 1):
            for server, start in (
                    ("egis", lambda: start_server("granian", env, port, args, scratch)),
                    ("floor, Flask", lambda: start_floor("create_app", floor_env, port, args)),
                    ("floor, plain WSGI",
                     lambda: start_floor("create_wsgi_app", floor_env, port, args))):
                with serving(start()):
                    time.sleep(2)  # let every worker finish warming up
                    results.append((run, server, loads(port, key, args, scratch)))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        admin(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")

    print(f"\ngranian, {args.workers} workers x {args.worker_threads} threads, wrk "
          f"-t{args.threads} -c{args.connections} -d{args.duration}s, {args.runs} runs\n")
    print("| run | app | load | requests/s | vs egis's no-op | stored events/s | p99 "
          "| non-2xx | CPU ms/request: granian / PostgreSQL |")
    print("|---|---|---|---|---|---|---|---|---|")
    egis_noop = {}
    for run, server, rows in results:
        if server == "egis":
            egis_noop[run] = rows[0]["rps"]
        for row in rows:
            stored = f"{row['stored']:,.0f}" if row["stored"] is not None else "-"
            print(f"| {run} | {server} | {row['load']} | {row['rps']:,.0f} | "
                  f"{row['rps'] / egis_noop[run]:.2f} | {stored} | {row['p99']} | "
                  f"{row['non2xx']} | {row['cpu']['granian']:.2f} / "
                  f"{row['cpu']['postgres']:.2f} |")


if __name__ == "__main__":
    main()
