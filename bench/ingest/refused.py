"""What a request that stores nothing costs: a bot's, a duplicate, one over the rate limit.

    python -m bench.ingest.refused [--server granian|gunicorn] [--workers 3] [--duration 10]

A flood of such requests is what rate limits and the bot filter are there to turn away, so
each should cost less than a request that stores a batch. With a database of its own
(egis_bench_<pid>, dropped at the end) and a site as bench.ingest.throughput makes them, this starts
the server twice, in turn (granian as deployed by default, `--workers` x 4 threads): with the limits
out of the load's reach, for the no-op, new 1-event batches, a bot's browser requests (an
Origin and a headless browser's User-Agent: 200 `"bot": true`, nothing stored) and one batch
sent again and again (200 `"duplicate": true`), and a new unknown key in every request (401;
beyond EGIS_RATE_LIMIT_BAD_KEY, 60 a minute per client, 429); then with the key's limit at 10
a minute, for the no-op again and requests over that limit (429). Every refused request of a
known key adds one to its site's tally (app.runtime.tally). Prints each load's rate, its ratio to
the no-op of the same server, p99 and CPU per request. Needs wrk.
"""
import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from bench.harness.database import admin, create_bench_site, database_url, run_database
from bench.harness.load import load_arguments, post_batches, wrk
from bench.harness.servers import bench_env, free_ports, serving, start_server

DB_NAME = run_database("bench")
DB_URL = database_url(DB_NAME)
SCRIPT = str(Path(__file__).with_name("refused.lua"))
CHROME = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/140.0.0.0 Safari/537.36")
HEADLESS = CHROME.replace("Chrome/", "HeadlessChrome/")
BATCH = json.dumps({"id": "refused-1", "sessionId": "s", "anonymousId": "a",
                    "timestamp": 1763700001000,
                    "events": [{"type": "pageview", "timestamp": 1763700000000,
                                "pageUrl": "https://bench.example/"}]})

Row = tuple[str, dict]


def same_request(port: int, key: str, args: argparse.Namespace, user_agent: str,
                 **script_env: str) -> dict:
    return wrk("/api/events", args.duration, args.connections, args.threads,
               {"EGIS_KEY": key, "EGIS_BODY": BATCH, "EGIS_ORIGIN": "https://bench.example",
                "EGIS_USER_AGENT": user_agent, **script_env}, SCRIPT, port=port,
               database=DB_NAME)


def noop(port: int, args: argparse.Namespace) -> Row:
    return "GET /healthz (no-op)", wrk("/healthz", args.duration, args.connections,
                                       args.threads, port=port)


def within_limits(port: int, key: str, args: argparse.Namespace, scratch: str) -> list[Row]:
    _, _, _, new = post_batches(port, key, DB_URL, args, scratch, 1, False)
    rows = [noop(port, args), ("new 1-event batches (stored)", new),
            ("a bot's browser requests (200, bot)", same_request(port, key, args, HEADLESS))]
    same_request(port, key, args, CHROME)  # stores BATCH: from now on, a duplicate
    rows.append(("the same batch again (200, duplicate)", same_request(port, key, args, CHROME)))
    rows.append(("a new unknown key each time (401, then 429)",
                 same_request(port, key, args, CHROME, EGIS_UNKNOWN_KEYS="1")))
    return rows


def over_the_limit(port: int, key: str, args: argparse.Namespace) -> list[Row]:
    return [noop(port, args),
            ("over the key's limit (429)", same_request(port, key, args, CHROME))]


def main() -> None:
    parser = argparse.ArgumentParser()
    load_arguments(parser)
    parser.add_argument("--server", choices=("gunicorn", "granian"), default="granian")
    parser.set_defaults(workers=3, duration=10)
    args = parser.parse_args()
    [port] = free_ports(1)
    env = bench_env(DB_URL, port, args.workers, args.worker_threads)
    key = create_bench_site(DB_NAME, env)
    scratch = tempfile.mkdtemp(prefix="egis-bench-")
    tables = []
    try:
        for limit, measure in (("100000000/minute",
                                lambda: within_limits(port, key, args, scratch)),
                               ("10/minute", lambda: over_the_limit(port, key, args))):
            server_env = {**env, "EGIS_RATE_LIMIT_KEY": f'"{limit}"'}
            with serving(start_server(args.server, server_env, port, args, scratch)):
                time.sleep(2)  # let every worker finish warming up
                tables.append((limit, measure()))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        admin(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")

    print(f"\n{args.workers} {args.server} workers x {args.worker_threads} threads, "
          f"wrk -t{args.threads} -c{args.connections} -d{args.duration}s\n")
    print(f"| key's limit | load | requests/s | vs no-op | p99 | non-2xx "
          f"| CPU ms/request: {args.server} / PostgreSQL |")
    print("|---|---|---|---|---|---|---|")
    for limit, rows in tables:
        base = rows[0][1]["rps"]
        for name, result in rows:
            cpu = result["cpu"]
            print(f"| {limit} | {name} | {result['rps']:,.0f} | {result['rps'] / base:.2f} | "
                  f"{result['p99']} | {result['non2xx']} | {cpu[args.server]:.2f} / "
                  f"{cpu['postgres']:.2f} |")


if __name__ == "__main__":
    main()
