"""Read-surface benchmark: a fixed mix of MCP tool calls, as an agent makes them, timed.

    python -m bench.read.read_surface [--database egis_bench_read_10m | --sqlite FILE]
                                      [--tree DIR | --ref REF] [--repeat 3] [--explain N]
                                      [--timezone ZONE] [--output FILE] [--live-minutes 30]

Reads a database that bench.harness.seed seeded (PostgreSQL: `--events 10000000 --days 90
--database egis_bench_read_10m`; SQLite: `--events 1000000 --days 90 --sqlite FILE`). The code
measured is the tree's: --tree DIR imports DIR's app (bench.harness.trees.run_tree), --ref REF
exports that commit of this repository (`git archive`) and runs it, so another branch's tools
are measured without touching its worktree. The run first upgrades the database with that code
(`upgrade_schema`, as `flask db upgrade`: a later migration, the site time zone, lands on a
database seeded before it), gives the site --timezone if the schema has one, and issues a server
key. Then it stores the site's last --live-minutes minutes of traffic (bench.harness.live: a
seeded database's traffic ends with its seeding, and `period` 5min / 30min end at the call).

Each call of MIX (the last 30 days: the tools' default) is a JSON-RPC `tools/call` POSTed to
/api/mcp through Flask's test client with that key, so the route, the protocol layer, the
argument validation and the queries are all measured, whatever the implementation; `ping` is
the no-op of the same run. The mix runs `--repeat` times, round-robin; the table gives each
call's median, its runs, the ratio of the median to the no-op's, and what it answered (a tool
error or a JSON-RPC error in any run is reported, in bold). Then the mix's p50, p95 (nearest
rank) and max over the calls' medians (a failed run counted at the time it took), and the
slowest single run.
--explain N (PostgreSQL): for the N slowest calls, the slowest SQL statement each ran is shown
with EXPLAIN (ANALYZE, BUFFERS), under the SET LOCALs the call made (without ANALYZE for a
call that failed or ran out of its time limit).
"""
import argparse
import math
import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bench.harness import ROOT
from bench.harness.database import database_url
from bench.harness.trees import export, run_tree, tree_commit

DOMAIN = "bench.example"
PROTOCOL = "2025-11-25"
DEFAULT_DATABASE = "egis_bench_read_10m"


def q(metrics: list[str], dimensions: list[str] | None = None, **more: Any) -> dict[str, Any]:
    return {"metrics": metrics, **({"dimensions": dimensions} if dimensions else {}), **more}


# (label, tool, arguments): docs/AGENTS.md.
MIX: list[tuple[str, str, dict[str, Any]]] = [
    ("top pages", "query", q(["visitors", "pageviews"], ["event:page"], limit=10)),
    ("entry pages", "query", q(["visits", "bounce_rate"], ["visit:entry_page"], limit=10)),
    ("exit pages", "query", q(["visits"], ["visit:exit_page"], limit=10)),
    ("sources", "query", q(["visitors", "visits"], ["visit:source"], limit=10)),
    ("channels", "query", q(["visitors", "bounce_rate", "visit_duration"], ["visit:channel"])),
    ("countries", "query", q(["visitors", "percentage"], ["visit:country"], limit=20)),
    ("browsers", "query", q(["visitors"], ["visit:browser"])),
    ("devices", "query", q(["visitors", "visits", "bounce_rate"], ["visit:device"])),
    ("os and version", "query", q(["visitors"], ["visit:os", "visit:os_version"], limit=20)),
    ("campaigns", "query", q(["visitors", "visits"], ["visit:utm_campaign"], limit=10)),
    ("DE mobile by source", "query", q(["visitors", "visits"], ["visit:source"], filters=[
        ["is", "visit:country", ["DE"]], ["is", "visit:device", ["Mobile"]]], limit=10)),
    ("blog pages", "query", q(["visitors", "pageviews"], ["event:page"],
                              filters=[["matches", "event:page", ["/blog/**"]]], limit=10)),
    ("search or google, not desktop", "query", q(["visitors"], ["visit:browser"], filters=[
        ["or", [["is", "visit:channel", ["Organic Search"]],
                ["contains", "visit:source", ["oogle"]]]],
        ["not", ["is", "visit:device", ["Desktop"]]]])),
    ("video props", "query", q(["visitors", "events"], ["event:props:video"],
                               filters=[["is", "event:name", ["video_play"]]])),
    ("days vs previous", "query", q(["visitors", "pageviews"], ["time:day"],
                                    compare="previous_period")),
    ("channels vs previous", "query", q(["visitors", "visits"], ["visit:channel"],
                                        compare="previous_period")),
    ("totals", "query", q(["visitors", "visits", "pageviews", "bounce_rate", "visit_duration",
                           "views_per_visit"])),
    ("signup rate by source", "query", q(["visitors", "conversion_rate"], ["visit:source"],
                                         filters=[["is", "event:goal", ["signup"]]], limit=10)),
    ("goals", "query", q(["visitors", "conversion_rate"], ["event:goal"])),
    ("funnel pages", "funnel", {"steps": [{"page": "/"}, {"page": "/pricing"},
                                          {"page": "/signup"}]}),
    ("funnel page to goal", "funnel", {"steps": [{"page": "/blog/**"}, {"page": "/signup"},
                                                 {"goal": "signup"}]}),
    ("funnel visitors", "funnel", {"steps": [{"page": "/pricing"}, {"goal": "checkout"}],
                                   "unit": "visitor", "window_hours": 72}),
    ("weekly retention", "retention", {}),  # the default: this week and the 7 before
    ("paths after a popular page", "paths", {"start": {"page": "/pricing"}}),
    ("paths from the entry", "paths", {}),
    ("paths before a goal", "paths", {"end": {"goal": "signup"}}),
    # who is on the site now (bench.harness.live tops up the last 30 minutes first), new or
    # returning, what visitors who saw a page did, money by campaign
    ("5min visitors", "query", q(["visitors"], period="5min")),
    ("30min by minute", "query", q(["visitors", "pageviews"], ["time:minute"], period="30min")),
    ("visits by visitor type", "query", q(["visitors", "visits"], ["visit:visitor_type"])),
    ("pages of visits that saw /pricing", "query", q(
        ["visitors", "pageviews"], ["event:page"], filters=[
            ["has_done", ["is", "event:page", ["/pricing"]]]], limit=10)),
    ("revenue by campaign", "query", q(["total_revenue", "orders", "average_revenue"],
                                       ["visit:utm_campaign"], currency="USD", limit=10)),
    ("describe", "describe_data", {}),
    ("describe sources", "describe_data", {"dimension": "visit:source", "limit": 20}),
    ("overview (kept)", "get_overview", {}),
    ("web vitals (kept)", "get_web_vitals", {}),
]


@dataclass
class Measured:
    label: str
    tool: str
    runs: list[float] = field(default_factory=list)
    answer: str = ""
    failed: bool = False
    statements: list[tuple[float, str, Any, list[str]]] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.runs)


def rpc(method: str, params: dict[str, Any] | None = None) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": method, **(
        {"params": params} if params is not None else {})})


class Caller:
    """POSTs JSON-RPC to /api/mcp as an agent does, recording each call's SQL statements."""

    def __init__(self, url: str, timezone: str | None) -> None:
        from app import create_app
        from app.access.keys import issue
        from app.cli import upgrade_schema
        from models import Site, database
        from models.api_key import SERVER

        self.app = create_app({"DATABASE_URL": url, "RATE_LIMIT_MCP": "1000000/minute"})
        with self.app.app_context():
            upgrade_schema()
            with database.connection_context():
                site = Site.get(Site.domain == DOMAIN)
                if timezone and "timezone" in Site._meta.fields:
                    Site.update(timezone=timezone).where(Site.id == site.id).execute()
                key = issue(site, SERVER, self.app.config["SERVER_KEY_PREFIX"]).key
        self.headers = {"Authorization": f"Bearer {key}", "Accept": "application/json",
                        "Content-Type": "application/json", "MCP-Protocol-Version": PROTOCOL}
        self.client = self.app.test_client()
        self.database = database.obj if hasattr(database, "obj") else database
        self.recorded: list[tuple[float, str, Any]] | None = None
        self._execute = self.database.execute_sql
        self.database.execute_sql = self._recording_execute

    def _recording_execute(self, sql: str, params: Any = None, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return self._execute(sql, params, *args, **kwargs)
        finally:  # a statement cancelled by the call's time limit is the one to see
            if self.recorded is not None:
                self.recorded.append((time.perf_counter() - started, sql, params))

    def explain(self, sql: str, params: Any, settings: list[str], analyze: bool = True) -> str:
        """EXPLAIN (ANALYZE, BUFFERS) of a statement, in a transaction with the SET LOCALs its
        call made (its time limit included), rolled back; the plan without ANALYZE when the
        statement does not finish within that limit, or when not `analyze` (a call that
        failed)."""
        from peewee import OperationalError

        plain = ("COSTS", "(the plan without ANALYZE: the call failed or ran out of time)\n")
        for options, note in [("ANALYZE, BUFFERS", ""), plain] if analyze else [plain]:
            try:
                with (self.app.app_context(), self.database.connection_context(),
                      self.database.atomic() as transaction):
                    for setting in settings:
                        self._execute(setting)
                    cursor = self._execute(f"EXPLAIN ({options}) {sql}", params)
                    plan = "\n".join(row[0] for row in cursor.fetchall())
                    transaction.rollback()
                return note + plan
            except OperationalError:
                continue
        return "(EXPLAIN failed)"

    def post(self, body: bytes) -> tuple[float, dict[str, Any], list[tuple[float, str, Any]]]:
        self.recorded = []
        started = time.perf_counter()
        response = self.client.post("/api/mcp", data=body, headers=self.headers)
        elapsed = (time.perf_counter() - started) * 1000
        statements, self.recorded = self.recorded, None
        try:
            answer = orjson.loads(response.data)
        except orjson.JSONDecodeError:
            answer = {"error": {"message": f"HTTP {response.status_code}: "
                                           f"{response.data[:200]!r}"}}
        return elapsed, answer, statements


def outcome(answer: dict[str, Any]) -> tuple[bool, str]:
    """(failed, a short description of the answer)."""
    if "error" in answer:
        return True, f"JSON-RPC error: {answer['error'].get('message', '')}"[:160]
    result = answer.get("result", {})
    text = " ".join(part.get("text", "") for part in result.get("content", []))
    if result.get("isError"):
        return True, f"tool error: {text}"[:160]
    structured = result.get("structuredContent") or {}
    rows = structured.get("results", structured.get("steps"))
    size = f"{len(rows)} rows; " if isinstance(rows, list) else ""
    return False, (size + text.splitlines()[0] if text else size)[:90]


def measure(caller: Caller, repeat: int) -> tuple[list[float], list[Measured]]:
    caller.post(rpc("tools/list", {}))  # imports the agent layer, as a worker's first call does
    noop, measured = [], [Measured(label, tool) for label, tool, _ in MIX]
    for _ in range(repeat):
        noop.append(caller.post(rpc("ping"))[0])
        for entry, (_, tool, arguments) in zip(measured, MIX, strict=True):
            elapsed, answer, statements = caller.post(
                rpc("tools/call", {"name": tool, "arguments": arguments}))
            entry.runs.append(elapsed)
            failed, said = outcome(answer)
            if failed or not entry.failed:  # a run's failure stays reported
                entry.failed, entry.answer = failed, said
            queries = [statement for statement in statements
                       if not statement[1].upper().startswith("SET ")]
            slowest = max(queries, default=None, key=lambda statement: statement[0])
            if slowest and (not entry.statements or slowest[0] > entry.statements[0][0]):
                settings = call_settings(statements)
                entry.statements = [(*slowest, settings)]
    return noop, measured


def call_settings(statements: list[tuple[float, str, Any]]) -> list[str]:
    """The SETs a call made, each once, for EXPLAIN to repeat: a read in a REPEATABLE READ
    snapshot (issue 38's read path) sets its transaction on each of its two connections, and
    the second adopts the first's exported snapshot (`SET TRANSACTION SNAPSHOT`), which is gone
    once the call is over, so that one is left out (EXPLAIN's transaction takes its own)."""
    settings: list[str] = []
    for _, sql, _ in statements:
        if (sql.upper().startswith("SET ") and sql not in settings
                and not sql.upper().startswith("SET TRANSACTION SNAPSHOT")):
            settings.append(sql)
    return settings


def nearest_rank(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(math.ceil(share * len(ordered)) - 1, 0)]


def report(backend: str, commit: str, noop: list[float], measured: list[Measured]) -> str:
    base = statistics.median(noop)
    lines = [f"### {backend}: {len(measured)} calls, median of {len(noop)} runs each",
             f"Code: {commit}. Machine: {os.cpu_count()} cores, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. No-op (`ping`) median "
             f"{base:.2f} ms (runs {', '.join(f'{run:.2f}' for run in noop)}).", "",
             "| call | tool | median (ms) | runs (ms) | / no-op | answer |",
             "|---|---|---:|---|---:|---|"]
    for entry in measured:
        runs = ", ".join(f"{run:.0f}" for run in entry.runs)
        status = f"**{entry.answer}**" if entry.failed else entry.answer
        lines.append(f"| {entry.label} | {entry.tool} | {entry.median:.0f} | {runs} | "
                     f"{entry.median / base:,.0f} | {status.replace('|', '/')} |")
    medians = [entry.median for entry in measured]
    failed = sum(entry.failed for entry in measured)
    lines += ["", f"Mix over the {len(measured)} calls' medians: p50 "
                  f"{nearest_rank(medians, 0.5):.0f} ms, p95 {nearest_rank(medians, 0.95):.0f} ms,"
                  f" max {max(medians):.0f} ms; slowest single run "
                  f"{max(max(entry.runs) for entry in measured):.0f} ms."
              + (f" {failed} calls failed in at least one run (in bold above), counted at the "
                 "time they took: for a time limit's error, a lower bound." if failed else "")]
    return "\n".join(lines)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default=DEFAULT_DATABASE, help="PostgreSQL database")
    parser.add_argument("--sqlite", metavar="FILE", help="a seeded SQLite file instead")
    code = parser.add_mutually_exclusive_group()
    code.add_argument("--tree", type=Path, help="run this directory's code")
    code.add_argument("--ref", help="run this commit's code (git archive of this repository)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timezone", help="set the site's time zone, when the schema has one")
    parser.add_argument("--explain", type=int, default=0, metavar="N",
                        help="EXPLAIN the slowest statement of the N slowest calls")
    parser.add_argument("--output", type=Path, help="also write the report to this file")
    parser.add_argument("--live-minutes", type=int, default=30, metavar="N",
                        help="first store the last N minutes of traffic (0: none)")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if args.ref:
        tree, commit = export(args.ref)
        commit = f"{args.ref} at {commit[:12]}"
    else:
        tree = (args.tree or ROOT).resolve()
        commit = f"{tree} at {tree_commit(tree)}"
    run_tree(tree)
    url = f"sqlite:///{Path(args.sqlite).resolve()}" if args.sqlite else database_url(
        args.database)
    caller = Caller(url, args.timezone)
    if args.live_minutes:
        from bench.harness.live import top_up

        print(f"stored {top_up(caller.app, url, args.live_minutes):,} events of the last "
              f"{args.live_minutes} minutes (bench.harness.live)", flush=True)
    noop, measured = measure(caller, args.repeat)
    backend = f"SQLite ({args.sqlite})" if args.sqlite else f"PostgreSQL ({args.database})"
    text = report(backend, commit, noop, measured)
    print(text, flush=True)
    if not args.sqlite:
        for entry in sorted(measured, key=lambda entry: -entry.median)[:args.explain]:
            if entry.statements:
                plan = (f"\n\n#### {entry.label}: slowest statement "
                        f"({entry.statements[0][0] * 1000:.0f} ms in the slowest run)\n```\n"
                        f"{caller.explain(*entry.statements[0][1:], not entry.failed)}\n```")
                print(plan, flush=True)
                text += plan
    if args.output:
        args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
