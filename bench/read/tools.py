"""Analytics benchmark: every MCP tool that answers without arguments, timed on a seeded site.

    python -m bench.read.tools [--events 1000000] [--days 30] [--database NAME] [--sqlite FILE]
                               [--timezone ZONE] [--reuse] [--repeat 5] [--indexes]
                               [--cold {gunicorn,granian}]

Seeds the database as bench.harness.seed does (the same options; --reuse keeps one seeded
before), then calls every tool through the MCP layer (tools/call, default arguments: the last 30
days) `--repeat` times; the table shows the first call, then the fastest and the median of the
others, in milliseconds (on a shared machine the fastest is the closest to the query's own
cost).
--indexes adds the covering indexes proposed for a migration (PROPOSED_INDEXES); without it
they are dropped, so the table shows the schema as migrated (PostgreSQL).
--cold adds a column: each tool called once over HTTP by a server just started with one worker
(gunicorn or granian, as deployed), timed by the client. That is what an agent waits for when its
call is a worker's first, which imports the agent layer (blueprints/mcp.py).
"""
import argparse
import statistics
import tempfile
import time
import urllib.request

import orjson
import psycopg2

from bench.harness.seed import DOMAIN, database_of, prepare, seed_arguments
from bench.harness.servers import bench_env, flask, free_ports, serving, start_server

# Proposed migration: index-only scans for the page-view and web-vitals tools, and a
# receive-time range for ingest health.
PROPOSED_INDEXES = {
    "event_pageview_cover": "ON event (site_id, occurred_at) INCLUDE (session_id, anonymous_id,"
                            " weight, page_url, referrer, properties) WHERE type = 'pageview'",
    "event_performance_cover": "ON event (site_id, occurred_at) INCLUDE (page_url, weight, "
                               "properties) WHERE type = 'performance'",
    "event_site_id_received_at": "ON event (site_id, received_at)",
}


def set_indexes(url: str, wanted: bool) -> None:
    connection = psycopg2.connect(url)
    connection.autocommit = True
    cursor = connection.cursor()
    for name, definition in PROPOSED_INDEXES.items():
        cursor.execute(f"CREATE INDEX IF NOT EXISTS {name} {definition}" if wanted
                       else f"DROP INDEX IF EXISTS {name}")
    cursor.execute("VACUUM ANALYZE event")
    connection.close()


def time_tools(url: str, repeat: int) -> list[tuple[str, float, float, float, str]]:
    from app import create_app
    from app.agent.tools import MCP
    from models import Site, database

    app = create_app({"DATABASE_URL": url})
    results = []
    with app.app_context(), database.connection_context():
        site = Site.get(Site.domain == DOMAIN)
        # the listed tools that answer without arguments (not query and funnel; not the
        # retired ones, which answer with the query call to make instead)
        for tool in [tool for tool in MCP.tools.values()
                     if tool.listed and not tool.input_schema.get("required")]:
            timings, text = [], ""
            for _ in range(repeat):
                started = time.perf_counter()
                output = tool.handler(site, {})
                timings.append((time.perf_counter() - started) * 1000)
                text = output.text.splitlines()[0]
            warm = timings[1:] or timings
            results.append((tool.name, timings[0], min(warm), statistics.median(warm), text))
    return results


def time_cold_calls(url: str, server: str, tools: list[str]) -> dict[str, float]:
    """Milliseconds for each tool's call over HTTP, each answered by the only worker of a
    server started for that call (its /healthz answered first, so the worker is up)."""
    [port] = free_ports(1)
    env = bench_env(url, port, workers=1, threads=4)
    key = flask("keys", "create", DOMAIN, "--kind", "server", env=env).splitlines()[-1]
    shape = argparse.Namespace(workers=1, worker_threads=4)
    timings = {}
    with tempfile.TemporaryDirectory(prefix="egis-bench-") as scratch:
        for name in tools:
            body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                 "params": {"name": name, "arguments": {}}})
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/api/mcp", data=body, method="POST", headers={
                    "Authorization": f"Bearer {key}", "Content-Type": "application/json",
                    "Accept": "application/json", "MCP-Protocol-Version": "2025-11-25"})
            with serving(start_server(server, env, port, shape, scratch)):
                started = time.perf_counter()
                with urllib.request.urlopen(request, timeout=30) as response:
                    answer = orjson.loads(response.read())
                timings[name] = (time.perf_counter() - started) * 1000
            if "result" not in answer or answer["result"].get("isError"):
                raise RuntimeError(f"{name} failed: {answer}")
    return timings


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    seed_arguments(parser)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--indexes", action="store_true", help="add the proposed indexes")
    parser.add_argument("--cold", choices=("gunicorn", "granian"),
                        help="also time each tool as a fresh worker's first MCP call")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    prepare(args)
    url = database_of(args)
    if not args.sqlite:
        set_indexes(url, args.indexes)
    results = time_tools(url, args.repeat)
    cold = time_cold_calls(url, args.cold, [row[0] for row in results]) if args.cold else {}
    cold_header = f" {args.cold} worker's first call (ms) |" if cold else ""
    print(f"\n| tool | first call (ms) | fastest of next {args.repeat - 1} (ms) | median (ms) |"
          f"{cold_header} says |")
    print("|---|---:|---:|---:|" + ("---:|" if cold else "") + "---|")
    for name, first, fastest, median, text in results:
        cold_cell = f" {cold[name]:.0f} |" if cold else ""
        print(f"| {name} | {first:.0f} | {fastest:.0f} | {median:.0f} |{cold_cell} {text[:60]} |")


if __name__ == "__main__":
    main()
