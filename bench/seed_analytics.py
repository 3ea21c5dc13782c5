"""Analytics benchmark: seed a site with N events in PostgreSQL, then time every MCP tool.

    python bench/seed_analytics.py [--events 1000000] [--reuse] [--repeat 5] [--indexes]
                                   [--cold {gunicorn,granian}]

Creates (or reuses, with --reuse: hence its fixed name) the database egis_analytics_bench, runs
the migrations, and seeds one site, bench.example, with N events over the last 30 days shaped
like real traffic (sessions of page views with heartbeats, scrolls, clicks, web vitals, errors,
goals; identified users; the last days sampled at weight 10), plus server events, crawl hits,
ingest tallies and a second site's noise. Rows go in through COPY, so a million take seconds.
Then every tool is called through the MCP layer (tools/call, default arguments: the last 30
days) `--repeat` times; the table shows the first call, then the fastest and the median of the
others, in milliseconds (on a shared machine the fastest is the closest to the query's own
cost).
--indexes adds the covering indexes proposed for a migration (PROPOSED_INDEXES); without it
they are dropped, so the table shows the schema as migrated.
--cold adds a column: each tool called once over HTTP by a server just started with one worker
(gunicorn or granian, as deployed), timed by the client. That is what an agent waits for when its
call is a worker's first, which imports the agent layer (blueprints/mcp.py).
"""
import argparse
import io
import random
import statistics
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import psycopg2
from ingest import bench_env, flask, serving, start_server
from pg import admin, database_url, free_ports

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DB_NAME = "egis_analytics_bench"
DB_URL = database_url(DB_NAME)
DOMAIN = "bench.example"
EVENT_COLUMNS = ("site_id", "session_id", "anonymous_id", "user_id", "type", "name", "page_url",
                 "referrer", "properties", "occurred_at", "received_at", "weight")
REFERRERS = ["https://www.google.com/", "https://duckduckgo.com/", "https://www.bing.com/",
             "https://news.ycombinator.com/", "https://t.co/", "https://www.reddit.com/",
             "https://github.com/", "https://chatgpt.com/", "https://www.linkedin.com/",
             f"https://{DOMAIN}/pricing"]
UTM = ["newsletter", "twitter", "google", "partner", "spring-sale"]
GOALS = ["signup", "checkout", "newsletter", "demo-request"]
ERRORS = [f"TypeError: cannot read properties of undefined (reading 'x{n}')" for n in range(40)]
CRAWLERS = [("GPTBot", "ai_training"), ("ClaudeBot", "ai_training"), ("PerplexityBot",
            "ai_search"), ("Googlebot", "search_engine"), ("bingbot", "search_engine"),
            ("AhrefsBot", "seo"), ("UptimeRobot", "monitor"), (None, "unknown")]
# Proposed migration: index-only scans for the page-view and web-vitals tools, and a
# receive-time range for ingest health.
PROPOSED_INDEXES = {
    "event_pageview_cover": "ON event (site_id, occurred_at) INCLUDE (session_id, anonymous_id,"
                            " weight, page_url, referrer, properties) WHERE type = 'pageview'",
    "event_performance_cover": "ON event (site_id, occurred_at) INCLUDE (page_url, weight, "
                               "properties) WHERE type = 'performance'",
    "event_site_id_received_at": "ON event (site_id, received_at)",
}
VITAL_RANGES = {"lcp": (800, 6000), "inp": (40, 800), "cls": (0.0, 0.4), "fcp": (500, 4000),
                "ttfb": (50, 2000)}



def page(rng: random.Random) -> str:
    return f"/docs/{min(int(rng.paretovariate(1.2)), 500)}" if rng.random() < 0.7 else rng.choice(
        ["/", "/pricing", "/blog", "/about", "/signup"])


def session_events(rng: random.Random, site_id: int, now: datetime, number: int
                   ) -> Iterator[tuple[Any, ...]]:
    """One visit: page views, each followed by what a tracker sends while the page is open."""
    start = now - timedelta(seconds=rng.uniform(0, 30 * 86400))
    sampled = start > now - timedelta(days=5) and rng.random() < 0.1
    weight = 10.0 if sampled else 1.0
    session, visitor = f"s{number}", f"a{rng.randrange(number // 2 + 1)}"
    user = f"u{rng.randrange(20000)}" if rng.random() < 0.1 else None
    landing_referrer = rng.choice(REFERRERS) if rng.random() < 0.6 else ""
    utm = rng.choice(UTM) if rng.random() < 0.15 else None
    at = start
    for view in range(1 + min(int(rng.expovariate(0.6)), 12)):
        url = f"https://{DOMAIN}{page(rng)}" + (f"?utm_source={utm}" if utm and not view else "")
        referrer = f"https://{DOMAIN}/" if view else landing_referrer
        identified = user if view else None

        def row(kind: str, at: datetime, name: str | None = None, properties: Any = None,
                url: str = url, referrer: str = referrer, identified: str | None = identified
                ) -> tuple[Any, ...]:
            return (site_id, session, visitor, identified, kind, name, url, referrer,
                    None if properties is None else orjson.dumps(properties).decode(),
                    at, at + timedelta(seconds=1), weight)

        yield row("pageview", at)
        if rng.random() < 0.5:
            for metric, (low, high) in VITAL_RANGES.items():
                yield row("performance", at,
                          properties={metric: round(rng.uniform(low, high), 3)})
        for _ in range(min(int(rng.expovariate(0.3)), 20)):
            at += timedelta(seconds=15)
            yield row("heartbeat", at)
        for depth in (25, 50, 75, 100)[:rng.randrange(5)]:
            yield row("scroll", at, properties={"depth": depth})
        for _ in range(rng.randrange(3)):
            yield row("click", at, properties={"element": "a"})
        if rng.random() < 0.02:
            yield row("error", at, properties={"message": rng.choice(ERRORS), "stack": "at x"})
        if rng.random() < 0.05:
            yield row("custom", at, name=rng.choice(["video_play", "search", "share"]))
        if rng.random() < 0.03:
            yield row("goal", at, name=rng.choice(GOALS))
        at += timedelta(seconds=rng.uniform(5, 120))


def _text_field(value: Any) -> str:
    if value is None:
        return "\\N"
    return str(value).replace("\\", "\\\\").replace("\t", " ").replace("\n", " ")


def copy_rows(cursor: Any, table: str, columns: tuple[str, ...], rows: Iterator[tuple[Any, ...]],
              chunk: int = 100_000) -> int:
    """COPY in PostgreSQL's text format (tab-separated, \\N for NULL), `chunk` rows at a time."""
    count = 0
    while True:
        lines = []
        for row in rows:
            lines.append("\t".join(map(_text_field, row)))
            if len(lines) == chunk:
                break
        if not lines:
            return count
        cursor.copy_expert(f"COPY {table} ({', '.join(columns)}) FROM STDIN",
                           io.StringIO("\n".join(lines) + "\n"))
        count += len(lines)


def events(rng: random.Random, site_id: int, total: int, now: datetime
           ) -> Iterator[tuple[Any, ...]]:
    produced, number = 0, 0
    while True:
        number += 1
        for row in session_events(rng, site_id, now, number):
            if produced == total:
                return
            produced += 1
            yield row


def seed(cursor: Any, site_id: int, noise_site_id: int, total: int, now: datetime) -> None:
    rng = random.Random(20260728)
    copy_rows(cursor, "event", EVENT_COLUMNS, events(rng, site_id, total, now))
    copy_rows(cursor, "event", EVENT_COLUMNS, events(rng, noise_site_id, total // 10, now))
    server_rows = []
    for number in range(max(total // 200, 10)):
        at = now - timedelta(seconds=rng.uniform(0, 30 * 86400))
        refund = rng.random() < 0.05
        server_rows.append((str(uuid.UUID(int=rng.getrandbits(128))), site_id, "purchase",
                            f"u{rng.randrange(20000)}", f"order-{number}",
                            -rng.randrange(500, 5000) if refund else rng.randrange(500, 20000),
                            rng.choice(["USD", "USD", "EUR", "JPY"]), at, at))
    copy_rows(cursor, "server_event", ("uid", "site_id", "event_name", "identified_user_id",
                                       "order_id", "amount_minor", "currency", "occurred_at",
                                       "received_at"), iter(server_rows))
    crawl = ((site_id, page(rng), "bench", *rng.choice(CRAWLERS), rng.random() < 0.5,
              rng.random() < 0.02, now - timedelta(seconds=rng.uniform(0, 30 * 86400)))
             for _ in range(max(total // 20, 10)))
    copy_rows(cursor, "crawl_hit", ("site_id", "path", "user_agent", "crawler", "category",
                                    "verified", "spoofed", "received_at"), crawl)
    tallies = ((site_id, (now - timedelta(days=day)).date(), reason, rng.randrange(1, 500))
               for day in range(30) for reason in ("sampled", "duplicate", "bot", "rejected_400",
                                                    "rejected_429"))
    copy_rows(cursor, "ingest_tally", ("site_id", "day", "reason", "count"), tallies)


def set_indexes(wanted: bool) -> None:
    connection = psycopg2.connect(DB_URL)
    connection.autocommit = True
    cursor = connection.cursor()
    for name, definition in PROPOSED_INDEXES.items():
        cursor.execute(f"CREATE INDEX IF NOT EXISTS {name} {definition}" if wanted
                       else f"DROP INDEX IF EXISTS {name}")
    cursor.execute("VACUUM ANALYZE event")
    connection.close()


def prepare(total: int, reuse: bool) -> None:
    from app import create_app
    from app.cli import upgrade_schema
    from app.db import release_connections

    if not reuse:
        admin(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
        admin(f"CREATE DATABASE {DB_NAME}")
    create_app({"DATABASE_URL": DB_URL})
    upgrade_schema()
    release_connections()
    if reuse:
        return
    connection = psycopg2.connect(DB_URL)
    cursor = connection.cursor()
    cursor.execute("INSERT INTO site (domain, plan, created_at) VALUES (%s, 'pro', now()), "
                   "('noise.example', 'pro', now()) RETURNING id", (DOMAIN,))
    site_id, noise_id = (row[0] for row in cursor.fetchall())
    started = time.perf_counter()
    seed(cursor, site_id, noise_id, total, datetime.utcnow())
    connection.commit()
    connection.autocommit = True
    cursor.execute("VACUUM ANALYZE")
    connection.close()
    print(f"seeded {total:,} events for {DOMAIN} in {time.perf_counter() - started:.1f} s")


def time_tools(repeat: int) -> list[tuple[str, float, float, float, str]]:
    from app import create_app
    from app.agent.tools import MCP
    from models import Site, database

    app = create_app({"DATABASE_URL": DB_URL})
    results = []
    with app.app_context(), database.connection_context():
        site = Site.get(Site.domain == DOMAIN)
        for tool in MCP.tools.values():
            timings, text = [], ""
            for _ in range(repeat):
                started = time.perf_counter()
                output = tool.handler(site, {})
                timings.append((time.perf_counter() - started) * 1000)
                text = output.text.splitlines()[0]
            warm = timings[1:] or timings
            results.append((tool.name, timings[0], min(warm), statistics.median(warm), text))
    return results


def time_cold_calls(server: str, tools: list[str]) -> dict[str, float]:
    """Milliseconds for each tool's call over HTTP, each answered by the only worker of a
    server started for that call (its /healthz answered first, so the worker is up)."""
    [port] = free_ports(1)
    env = bench_env(DB_URL, port, workers=1, threads=4)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--reuse", action="store_true", help="keep the seeded database")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--indexes", action="store_true", help="add the proposed indexes")
    parser.add_argument("--cold", choices=("gunicorn", "granian"),
                        help="also time each tool as a fresh worker's first MCP call")
    args = parser.parse_args()
    prepare(args.events, args.reuse)
    set_indexes(args.indexes)
    results = time_tools(args.repeat)
    cold = time_cold_calls(args.cold, [row[0] for row in results]) if args.cold else {}
    cold_header = f" {args.cold} worker's first call (ms) |" if cold else ""
    print(f"\n| tool | first call (ms) | fastest of next {args.repeat - 1} (ms) | median (ms) |"
          f"{cold_header} says |")
    print("|---|---:|---:|---:|" + ("---:|" if cold else "") + "---|")
    for name, first, fastest, median, text in results:
        cold_cell = f" {cold[name]:.0f} |" if cold else ""
        print(f"| {name} | {first:.0f} | {fastest:.0f} | {median:.0f} |{cold_cell} {text[:60]} |")


if __name__ == "__main__":
    main()
