"""gunicorn against granian, each behind the same nginx, in one run.

    python -m bench.ingest.servers [--rounds 3] [--duration 8] [--connections 16]

Creates a database of its own (`egis_servers_bench_<pid>`, dropped at the end; a pro site and
its write key, as bench.ingest.throughput does) and Debian's nginx with deploy/nginx.conf as shipped
(only its port, upstream and paths swapped; both ports free ones), then, round
after round, starts one WSGI server on the upstream port and measures through nginx what
bench.ingest.throughput measures (the no-op GET /healthz, 50-, 5- (gzip) and 1-event batches,
the small ones again at half of their peak), stops it, and does the same with the other; the
order of the two alternates between rounds. Both get the same app, environment and process shape:

- gunicorn: `deploy/gunicorn.conf.py` (gthread, WORKERS x THREADS);
- granian: `deploy/granian_server.py` (WSGI interface, HTTP handled in Rust): WORKERS processes
  x THREADS blocking threads for the app.

Prints one Markdown table: per server and load the range over the rounds of requests/s, of the
ratio to the same round's gunicorn no-op, of stored events/s and p99, and CPU per request of the
server, nginx and PostgreSQL; then each server's worker memory. Needs wrk and nginx.
"""
import argparse
import os
import time
import urllib.request
from collections import defaultdict

from bench.harness.database import admin, create_bench_site, database_url, run_database
from bench.harness.load import load_arguments, measure_loads, spread
from bench.harness.servers import (
    NGINX_PORT,
    UPSTREAM_PORT,
    bench_env,
    nginx_in_front,
    serving,
    start_server,
    wait_for,
    worker_memory_mib,
)

DB_NAME = run_database("servers_bench")
SERVERS = ("gunicorn", "granian")


def warm_up(key: str) -> None:
    """A few posts through nginx, so that every worker has opened its database connection and
    compiled what a request needs before the measurement."""
    for number in range(40):
        request = urllib.request.Request(
            f"http://127.0.0.1:{NGINX_PORT}/api/events", method="POST",
            headers={"X-API-Key": key, "Content-Type": "application/json"},
            data=(b'{"id":"warm-%d-%d","sessionId":"w","anonymousId":"w","timestamp":1763700001000,'
                  b'"events":[{"type":"pageview","timestamp":1763700000000,'
                  b'"pageUrl":"https://bench.example/"}]}' % (time.time_ns(), number)))
        urllib.request.urlopen(request, timeout=10).read()


def main() -> None:
    parser = argparse.ArgumentParser()
    load_arguments(parser)
    parser.add_argument("--rounds", type=int, default=3)
    parser.set_defaults(duration=8)
    args = parser.parse_args()

    db_url = database_url(DB_NAME)
    env = {**bench_env(db_url, UPSTREAM_PORT, args.workers, args.worker_threads),
           "EGIS_TRUSTED_PROXIES": "1"}
    key = create_bench_site(DB_NAME, env)
    results: dict[tuple[str, str], list[tuple[float, float, float | None, dict]]] = (
        defaultdict(list))
    memory: dict[str, list[dict[str, float]]] = defaultdict(list)
    try:
        with nginx_in_front("egis-servers-") as scratch:
            for number in range(args.rounds):
                order = SERVERS if number % 2 == 0 else SERVERS[::-1]
                rounds: dict[str, list] = {}
                for name in order:
                    with serving(start_server(name, env, UPSTREAM_PORT, args,
                                              scratch)) as server:
                        wait_for(f"http://127.0.0.1:{NGINX_PORT}/healthz")
                        warm_up(key)
                        rounds[name] = measure_loads(NGINX_PORT, key, db_url, args, scratch)
                        memory[name] += worker_memory_mib(server.pid)
                gunicorn_noop = rounds["gunicorn"][0][1]
                for name, rows in rounds.items():
                    for label, rps, stored, result in rows:
                        results[(name, label)].append((rps, rps / gunicorn_noop, stored,
                                                       result))
    finally:
        admin(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")

    print(f"\nbehind nginx (deploy/nginx.conf), {args.workers} workers x {args.worker_threads} "
          f"threads each, wrk -t{args.threads} -c{args.connections} -d{args.duration}s, "
          f"{args.rounds} rounds, {os.cpu_count()} cores shared by all\n")
    print("| server | load | requests/s | vs gunicorn's no-op | stored events/s | p99 "
          "| CPU ms/request: server / nginx / PostgreSQL |")
    print("|---|---|---|---|---|---|---|")
    for (name, label), runs in results.items():
        stored = [run[2] for run in runs if run[2] is not None]
        cpu = [run[3]["cpu"] for run in runs]
        print(f"| {name} | {label} | {spread([run[0] for run in runs])} | "
              f"{spread([run[1] for run in runs], '{:.2f}')} | "
              f"{spread(stored) if stored else '-'} | "
              f"{spread([run[3]['p99_ms'] for run in runs])} ms | "
              f"{spread([c[name] for c in cpu], '{:.2f}')} / "
              f"{spread([c['nginx'] for c in cpu], '{:.2f}')} / "
              f"{spread([c['postgres'] for c in cpu], '{:.2f}')} |")
    for name, workers in memory.items():
        print(f"\n{name} workers, MiB (peak RSS / PSS / unique): " + ", ".join(
            f"{worker['peak_rss']:.1f} / {worker['pss']:.0f} / {worker['uss']:.0f}"
            for worker in workers))


if __name__ == "__main__":
    main()
