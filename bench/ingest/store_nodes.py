"""Where PostgreSQL spends a stored batch: the single-batch store statement (app.tracking.store)
run N times under EXPLAIN (ANALYZE), the median time of each of its INSERT nodes and of the
whole execution, the commit left out (its fsync is most of a lone batch's wall time and swings
with the disk). A node's time leaves out its reads of the other data-modifying CTEs: the first
node to read one (a CTE Scan) runs it, and that is the CTE's own node's time. A tree's own
statement, so two trees compare in the same minute:

    python -m bench.ingest.store_nodes [--tree DIR] [--database NAME] [--batches 1500]
    python -m bench.ingest.store_nodes --group 4 [--one-page] [--tree DIR] [--batches 1500]

The database (created when missing, never dropped) is migrated by the tree's code; each batch
is one page view of a browser request, five batches a session, a page of fifty.

With --group N, the group statement instead (what runs under load, app.tracking.writer), as the
tree's store.store_group sends it: groups of N 5-event batches of 100 sessions, five page views
on five pages each (bench.ingest.visit's "5-event gzip") or with --one-page a page view, scroll,
click and heartbeat on one page; the median time of the whole EXECUTE as the client sees it
(the parameter's conversion included, which EXPLAIN leaves out), the commit without its fsync
(synchronous_commit off), per group. Run it for two trees in turn, several times: a tenth
between runs is the machine.
"""
import argparse
import re
import statistics
import time
import uuid
from contextlib import suppress
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import psycopg2

from bench.harness import ROOT
from bench.harness.database import admin, database_url
from bench.harness.trees import run_tree

NODE = re.compile(r"(Insert on \w+).*actual time=[\d.]+\.\.([\d.]+)")
CTE_READ = re.compile(r"CTE Scan on (new_batch|stored)\b.*actual time=[\d.]+\.\.([\d.]+)")
TOTAL = re.compile(r"Execution Time: ([\d.]+)")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose code runs")
    parser.add_argument("--database", default="egis_store_nodes")
    parser.add_argument("--batches", type=int, default=1500)
    parser.add_argument("--group", type=int, help="batches per group statement")
    parser.add_argument("--one-page", action="store_true", help="with --group: one page per batch")
    return parser.parse_args()


def statement_params(store: Any, rows: Any) -> dict[str, Any]:
    """The single-batch statement's parameters, as app.tracking.store passes them."""
    params = {"site_id": rows.site_id, "batch_key": rows.batch_key, "count": len(rows.events),
              "received_at": rows.received_at, "session_id": rows.session_id,
              "anonymous_id": rows.anonymous_id, "user_id": None, "sent_ts": rows.sent_ts,
              "weight": rows.weight, "events": orjson.dumps(rows.events).decode(),
              "period": rows.period, "shard": rows.shard, **rows.context.columns()}
    # what the trees that merged the rollups in this statement pass
    for name in ("visit", "pages", "slots"):
        if hasattr(rows, name):
            params[name] = orjson.dumps(getattr(rows, name)() or {}).decode()
    return {name: params.get(name) for name, _type in batch_statement(store).parameters}


def batch_statement(store: Any) -> Any:
    """The tree's single-batch statement (built at first use while the rollups were merged in
    it)."""
    if hasattr(store, "BATCH_STATEMENT"):
        return store.BATCH_STATEMENT
    return store.statements()[0] if hasattr(store, "statements") else store._PG_STORE_BATCH


def main() -> None:
    args = parse_args()
    run_tree(args.tree)

    from app import create_app
    from app.cli import upgrade_schema
    from app.context.request import RequestContext
    from app.tracking import ingest, store
    from models import Site, database

    with suppress(psycopg2.errors.DuplicateDatabase):  # kept from an earlier run: migrated below
        admin(f"CREATE DATABASE {args.database}")
    app = create_app({"DATABASE_URL": database_url(args.database)})
    with app.app_context():
        upgrade_schema()
        with database.connection_context():
            site, _ = Site.get_or_create(domain="nodes.example", defaults={"plan": "pro"})
            context = RequestContext("DE", "Mobile", "Chrome", "131", "Android", "14", "de",
                                     "small")
            if args.group:
                times = group_times(args, store, ingest, site.id, context)
                print(f"{args.tree}: group statement, {args.group} batches of 5 events on "
                      f"{'one page' if args.one_page else 'five pages'}: "
                      f"{statistics.median(times):.0f} µs per group")
                return
            statement = batch_statement(store)
            types = ", ".join(sql_type for _name, sql_type in statement.parameters)
            database.execute_sql(f"PREPARE nodes({types}) AS {statement.body}")
            execute = ("EXPLAIN (ANALYZE, TIMING ON) EXECUTE nodes("
                       + ", ".join(f"%({name})s" for name, _ in statement.parameters) + ")")
            now, sent = datetime.utcnow(), 1_780_000_000_000
            times: dict[str, list[float]] = {}
            for number in range(args.batches):
                rows = batch_rows(store, ingest, site.id, context, [{
                    "type": "pageview", "timestamp": sent,
                    "pageUrl": f"https://nodes.example/p{number % 50}"}],
                    now + timedelta(milliseconds=number), sent, f"s{number // 5}",
                    f"a{number // 10}")
                cursor = database.execute_sql(execute, statement_params(store, rows))
                for name, spent in node_times([line for (line,) in cursor.fetchall()]).items():
                    times.setdefault(name, []).append(spent)
    print(f"{args.tree}: " + ", ".join(f"{name} {statistics.median(values) * 1000:.0f} µs"
                                       for name, values in times.items()))


def group_times(args: argparse.Namespace, store: Any, ingest: Any, site_id: int,
                context: Any) -> list[float]:
    """µs per group statement, each a group of new batches (store.store_group's)."""
    from models import database

    database.execute_sql("SET synchronous_commit = off")
    types = ("pageview", "scroll", "click", "heartbeat", "scroll")
    now, sent = datetime.utcnow(), 1_780_000_000_000
    times = []
    for number in range(args.batches // args.group):
        group = []
        for position in range(args.group):
            batch = number * args.group + position
            raw = [{"type": types[i] if args.one_page else "pageview", "timestamp": sent + i,
                    "pageUrl": f"https://nodes.example/page/{1 if args.one_page else i + 1}"}
                   for i in range(5)]
            group.append(batch_rows(store, ingest, site_id, context, raw,
                                    now + timedelta(milliseconds=batch), sent,
                                    f"s{batch % 100}", f"a{batch % 100}"))
        started = time.perf_counter()
        store.store_group(group)
        times.append((time.perf_counter() - started) * 1e6)
    return times


def batch_rows(store: Any, ingest: Any, site_id: int, context: Any, raw: list[dict[str, Any]],
               received: datetime, sent: int, session: str, visitor: str) -> Any:
    """A new batch of the browser events `raw` (the tracker's fields), as the tree's ingest
    makes its rows."""
    from app.tracking.quota import period_of, shard

    return store.BatchRows(
        site_id=site_id, batch_key=uuid.uuid4().hex, session_id=session, anonymous_id=visitor,
        user_id=None, sent_ts=sent, received_at=received, weight=1.0,
        events=[ingest.event_row(event, received, sent, "nodes.example") for event in raw],
        period=period_of(received), shard=shard(), context=context)


def node_times(plan: list[str]) -> dict[str, float]:
    """Each INSERT node's time (ms) less its reads of data-modifying CTEs, and the execution's."""
    spent: dict[str, float] = {}
    inserts: list[tuple[int, str]] = []  # the INSERT nodes enclosing the current line
    for line in plan:
        indent = len(line) - len(line.lstrip())
        while inserts and indent <= inserts[-1][0]:
            inserts.pop()
        if found := NODE.search(line):
            inserts.append((indent, found.group(1)))
            spent[found.group(1)] = float(found.group(2))
        elif (found := CTE_READ.search(line)) and inserts:
            spent[inserts[-1][1]] -= float(found.group(2))
        elif found := TOTAL.search(line):
            spent["execution"] = float(found.group(1))
    return spent


if __name__ == "__main__":
    main()
