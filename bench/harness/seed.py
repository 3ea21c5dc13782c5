"""Seed a database for the analytics benchmarks: a site with N events of realistic visits.

    python -m bench.harness.seed [--events 1000000] [--days 30] [--database NAME]
                                 [--sqlite FILE] [--timezone ZONE] [--reuse]

Creates (or reuses, with --reuse) a PostgreSQL database (default egis_analytics_bench), or with
--sqlite a SQLite file, runs egis's migrations (`app.cli.upgrade_schema`, as `flask db upgrade`),
and seeds one site, bench.example, with about N events over the last `--days` days shaped like
real traffic (bench/harness/visits.py: visits with their browser, country, language, device and
screen, sources, channels, referrers and UTM campaigns on the entry page view, page views with
web vitals, heartbeats, scrolls, clicks, form submits, errors, custom events with properties,
goals; identified users; returning visitors; the last two days sampled at weight 2), with the
visit context columns filled as ingest fills them (docs/ARCHITECTURE.md), plus server events,
crawl hits, ingest tallies and a second site's noise (a tenth as many events). PostgreSQL rows
go in through COPY, SQLite rows through executemany in transactions of 100,000; then the rows
ingest keeps (visits, visit pages, quarter hours) are derived from them
(app.rollups.merging.rebuild), in time order as ingest writes them, timed. --timezone sets the
site's time zone when the schema has one (migration 0009). The seeded database is what
bench.read.read_surface, bench.read.tools and bench.maintenance.replica read.
"""
import argparse
import io
import itertools
import random
import sqlite3
import time
import uuid
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg2

from bench.harness.database import admin, database_url
from bench.harness.visits import EVENT_COLUMNS, Row, events, flat, page_path

DEFAULT_DATABASE = "egis_analytics_bench"
DOMAIN = "bench.example"
NOISE_DOMAIN = "noise.example"
CHUNK = 100_000
CRAWLERS = [("GPTBot", "ai_training"), ("ClaudeBot", "ai_training"), ("PerplexityBot",
            "ai_search"), ("Googlebot", "search_engine"), ("bingbot", "search_engine"),
            ("AhrefsBot", "seo"), ("UptimeRobot", "monitor"), (None, "unknown")]
SERVER_COLUMNS = ("uid", "site_id", "event_name", "identified_user_id", "order_id",
                  "amount_minor", "currency", "occurred_at", "received_at")
CRAWL_COLUMNS = ("site_id", "path", "user_agent", "crawler", "category", "verified", "spoofed",
                 "received_at")
TALLY_COLUMNS = ("site_id", "day", "reason", "count")


def database_of(args: argparse.Namespace) -> str:
    """The DATABASE_URL the run seeds and reads."""
    if args.sqlite:
        return f"sqlite:///{Path(args.sqlite).resolve()}"
    return database_url(args.database)


def _text_field(value: Any) -> str:
    if value is None:
        return "\\N"
    return str(value).replace("\\", "\\\\").replace("\t", " ").replace("\n", " ")


def _text_line(values: Iterable[Any]) -> str:
    return "\t".join(map(_text_field, values))


def copy_lines(cursor: Any, table: str, columns: tuple[str, ...], lines: Iterator[str]) -> int:
    """COPY in PostgreSQL's text format (tab-separated, \\N for NULL), CHUNK lines at a time."""
    count = 0
    while True:
        chunk = list(itertools.islice(lines, CHUNK))
        if not chunk:
            return count
        cursor.copy_expert(f"COPY {table} ({', '.join(columns)}) FROM STDIN",
                           io.StringIO("\n".join(chunk) + "\n"))
        count += len(chunk)


def event_lines(rows: Iterator[Row]) -> Iterator[str]:
    """Each event as a COPY line; a page's and a visit's columns, shared by many events, are
    rendered once (most of the seeding time otherwise)."""
    page = visit = None
    page_text = visit_text = ""
    for event, event_page, event_visit in rows:
        if event_page is not page:
            page, page_text = event_page, _text_line(event_page)
        if event_visit is not visit:
            visit, visit_text = event_visit, _text_line(event_visit)
        yield f"{_text_line(event)}\t{page_text}\t{visit_text}"


class PostgresSink:
    def __init__(self, url: str) -> None:
        self.connection = psycopg2.connect(url)
        self.cursor = self.connection.cursor()

    def events(self, rows: Iterator[Row]) -> int:
        return copy_lines(self.cursor, "event", EVENT_COLUMNS, event_lines(rows))

    def rows(self, table: str, columns: tuple[str, ...], rows: Iterator[tuple[Any, ...]]) -> int:
        return copy_lines(self.cursor, table, columns, map(_text_line, rows))

    def finish(self) -> None:
        self.connection.commit()
        self.connection.autocommit = True
        self.cursor.execute("VACUUM ANALYZE")
        self.connection.close()


def _sqlite_value(value: Any) -> Any:
    # As Peewee stores them on SQLite: datetimes as ISO text (sqlite3's own adapter for them is
    # deprecated).
    return str(value) if isinstance(value, datetime) else value


class SqliteSink:
    def __init__(self, path: str) -> None:
        self.connection = sqlite3.connect(path, isolation_level=None)

    def events(self, rows: Iterator[Row]) -> int:
        return self.rows("event", EVENT_COLUMNS, flat(rows))

    def rows(self, table: str, columns: tuple[str, ...], rows: Iterator[Any]) -> int:
        statement = (f"INSERT INTO {table} ({', '.join(columns)}) "
                     f"VALUES ({', '.join('?' * len(columns))})")
        count = 0
        while True:
            chunk = [tuple(map(_sqlite_value, row)) for row in itertools.islice(rows, CHUNK)]
            if not chunk:
                return count
            self.connection.execute("BEGIN")
            self.connection.executemany(statement, chunk)
            self.connection.execute("COMMIT")
            count += len(chunk)

    def finish(self) -> None:
        self.connection.execute("ANALYZE")
        self.connection.close()


def seed(sink: Any, site_id: int, noise_site_id: int, total: int, days: int,
         now: datetime) -> int:
    """Store the site's events and the rest; returns the site's event count."""
    rng = random.Random(20260728)
    stored = sink.events(events(rng, site_id, DOMAIN, total, days, now))
    sink.events(events(rng, noise_site_id, NOISE_DOMAIN, total // 10, days, now))
    seconds = days * 86400

    def server_event(number: int) -> tuple[Any, ...]:
        at = now - timedelta(seconds=rng.uniform(0, seconds))
        refund = rng.random() < 0.05
        return (str(uuid.UUID(int=rng.getrandbits(128))), site_id, "purchase",
                f"u{rng.randrange(50000)}", f"order-{number}",
                -rng.randrange(500, 5000) if refund else rng.randrange(500, 20000),
                rng.choice(["USD", "USD", "EUR", "JPY"]), at, at)

    sink.rows("server_event", SERVER_COLUMNS, map(server_event, range(max(total // 200, 10))))
    crawl = ((site_id, page_path(rng), "bench", *rng.choice(CRAWLERS), rng.random() < 0.5,
              rng.random() < 0.02, now - timedelta(seconds=rng.uniform(0, seconds)))
             for _ in range(max(total // 20, 10)))
    sink.rows("crawl_hit", CRAWL_COLUMNS, crawl)
    tallies = ((site_id, str((now - timedelta(days=day)).date()), reason, rng.randrange(1, 500))
               for day in range(days) for reason in ("sampled", "duplicate", "bot",
                                                     "rejected_400", "rejected_429"))
    sink.rows("ingest_tally", TALLY_COLUMNS, tallies)
    sink.finish()
    return stored


def upgrade(url: str) -> Any:
    """Migrate the database with the code this process imports (`flask db upgrade`); the app."""
    from app import create_app
    from app.cli import upgrade_schema

    app = create_app({"DATABASE_URL": url})
    upgrade_schema()
    return app


def create_sites(app: Any, timezone: str | None) -> tuple[int, int]:
    from models import Site, database

    with app.app_context(), database.connection_context():
        zone = {"timezone": timezone} if timezone and "timezone" in Site._meta.fields else {}
        return tuple(Site.create(domain=domain, plan="pro", **zone).id
                     for domain in (DOMAIN, NOISE_DOMAIN))


def set_timezone(app: Any, timezone: str) -> None:
    """Give the seeded site `timezone` once the schema has the column (migration 0009)."""
    from models import Site, database

    if "timezone" not in Site._meta.fields:
        return
    with app.app_context(), database.connection_context():
        Site.update(timezone=timezone).where(Site.domain == DOMAIN).execute()


def prepare(args: argparse.Namespace) -> None:
    """Create, migrate and seed the database (with --reuse: migrate the existing one)."""
    from app.storage.db import release_connections

    url = database_of(args)
    if not args.reuse:
        if args.sqlite:
            Path(args.sqlite).unlink(missing_ok=True)
        else:
            admin(f"DROP DATABASE IF EXISTS {args.database} WITH (FORCE)")
            admin(f"CREATE DATABASE {args.database}")
    app = upgrade(url)
    if args.reuse:
        if args.timezone:
            set_timezone(app, args.timezone)
        release_connections()
        return
    now = datetime.utcnow()
    if not args.sqlite:
        from app.storage import partitions
        from models import database

        with app.app_context(), database.connection_context():
            partitions.ensure(now - timedelta(days=args.days))  # history in months of its own
    site_id, noise_id = create_sites(app, args.timezone)
    release_connections()
    sink = SqliteSink(args.sqlite) if args.sqlite else PostgresSink(url)
    started = time.perf_counter()
    stored = seed(sink, site_id, noise_id, args.events, args.days, now)
    print(f"seeded {stored:,} events for {DOMAIN} over {args.days} days (and the rest) in "
          f"{time.perf_counter() - started:.1f} s")
    derive_rollups(app)


def derive_rollups(app: Any) -> None:
    """The rollups of the seeded events, derived at once (the merge after ingest keeps them up
    to date; COPY does not go through it), timed."""
    from app.rollups import merging
    from app.storage.db import is_postgres, release_connections
    from models import database

    started = time.perf_counter()
    with app.app_context(), database.connection_context():
        with database.atomic():
            if is_postgres():
                database.execute_sql("SET LOCAL statement_timeout = 0")
            count = merging.rebuild()
        # VACUUM too on PostgreSQL, as autovacuum does on a default server once rows are
        # inserted: it marks the new rows' pages all-visible, so index-only scans need no heap
        # (a server with autovacuum off, as this machine's, would otherwise measure a table
        # nothing ever vacuumed: visits by visit:visitor_type 1.9 s against 1.1 s vacuumed)
        command = "VACUUM ANALYZE" if is_postgres() else "ANALYZE"
        for table in ("visit", "visit_page", "event_slot"):
            database.execute_sql(f"{command} {table}")
    release_connections()
    print(f"derived {count:,} visit rows in {time.perf_counter() - started:.1f} s")


def seed_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=30, help="days of traffic to seed")
    parser.add_argument("--database", default=DEFAULT_DATABASE, help="PostgreSQL database")
    parser.add_argument("--sqlite", metavar="FILE", help="seed a SQLite file instead")
    parser.add_argument("--timezone", help="the site's time zone (IANA), once the schema has it")
    parser.add_argument("--reuse", action="store_true", help="keep the seeded database")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    seed_arguments(parser)
    prepare(parser.parse_args())


if __name__ == "__main__":
    main()
