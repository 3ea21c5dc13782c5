"""What a read replica buys ingest (EGIS_READ_DATABASE_URL, app/storage/replica.py): the rate at
which egis stores the tracker's 5-event gzip batches while agents' questions loop against it,
with the questions read on the primary and on a streaming replica, each as a ratio to ingest
alone in the same run.

    python -m bench.maintenance.replica [--events 1000000] [--days 30] [--duration 20]
                                        [--runs 3] [--readers 2] [--sessions 100]
                                        [--connections 8] [--threads 2]

A primary and a hot standby of the benchmark's own (initdb, pg_basebackup -R with a replication
slot, pg_ctl on free ports, as the postgres user), the primary seeded by bench.harness.seed
(--events over --days, the site bench.example) and served by gunicorn as deployed
(deploy/gunicorn.conf.py: a worker per core and one more, 4 threads each). Each run measures,
for --duration seconds each, in a rotated order (the site grows as ingest stores, so the order
is spread over the runs):

- alone: wrk posting 5-event gzip batches as the tracker sends them (bench.ingest.throughput's,
  browser headers; they belong to --sessions visits in turn: its 100 make each visit's rows hot,
  rewritten by every merge), no reads;
- primary: the same while --readers agents each loop READS (bench.read.read_surface's mix less six
  calls: 20) through /api/mcp, the server without EGIS_READ_DATABASE_URL;
- replica: the same with EGIS_READ_DATABASE_URL naming the standby;
- CPU 1 busy: ingest alone while `yes` keeps the agents' side busy: the control for what
  saturating the other core costs ingest on this machine whatever runs there (a shared cache
  and memory bus, a hypervisor's scheduling), which two real machines would not share.

The standby streams throughout (hot_standby_feedback on, as deploy/SCALING.md advises); a last
phase per run, "no standby", stops it and measures ingest alone once more: what streaming to a
replica costs the primary. Figures: events stored per second (rows counted on the primary), as
a ratio to "alone" in the same run; the MCP calls answered per second; the CPU seconds of the
primary's and the standby's processes.

Two cores stand in for two machines (taskset): CPU 0 is the ingest side, the primary, wrk and
the gunicorn that ingests; CPU 1 the agents' side, the standby, the agents' client and an app
host of their own (a second gunicorn on the same primary: /api/mcp routed to it, as a proxy in
front may do). On one machine the replica's queries and the tools' Python would otherwise take
the cores ingest needs, where the point of a replica is a machine of its own. With --shared the
agents call the ingest server instead, whose workers then do the tools' Python (parsing,
building and rendering each answer) beside ingest: that share stays with the app host whatever
the database, and more app hosts, not a replica, take it.
"""
import argparse
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from statistics import median
from typing import Any

import orjson

from bench.harness import ROOT
from bench.harness.batches import write_gzip_bodies
from bench.harness.database import stored_events
from bench.harness.load import INGEST_SCRIPT, wrk
from bench.harness.servers import bench_env, flask, free_ports, wait_for
from bench.read.read_surface import MIX, PROTOCOL

DATABASE = "egis_replica"
INGEST_CPU, STANDBY_CPU = "0", "1"
LEFT_OUT = {"os and version", "campaigns", "video props", "describe sources", "overview (kept)",
            "web vitals (kept)"}
READS = [(label, tool, arguments) for label, tool, arguments in MIX if label not in LEFT_OUT]
PHASES = ("alone", "primary", "replica", "CPU 1 busy")
SLOT = "egis_bench_standby"


def pinned(cpu: str, command: list[str]) -> list[str]:
    return ["taskset", "-c", cpu, *command]


class Server:
    """A PostgreSQL cluster in `root`, on a free port, pinned to `cpu`: a new one (initdb), or
    a hot standby of `primary` (pg_basebackup -R, streaming through a replication slot)."""

    def __init__(self, root: Path, cpu: str, primary: "Server | None" = None) -> None:
        versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"),
                          key=lambda path: int(path.parent.name))
        self.bin, self.root, self.data, self.cpu = versions[-1], root, root / "data", cpu
        self.port = free_ports(1)[0]
        root.mkdir()
        self.owner: list[str] = []
        if os.geteuid() == 0:  # initdb and postgres refuse root
            user = pwd.getpwnam("postgres")
            os.chown(root, user.pw_uid, user.pw_gid)
            self.owner = ["runuser", "-u", "postgres", "--"]
        if primary is None:
            self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
                      "--no-sync")
        else:
            self._run("pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U",
                      "postgres", "-D", str(self.data), "-R", "-C", "-S", SLOT, "-X", "stream",
                      "-c", "fast")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, tool: str, *arguments: str) -> None:
        subprocess.run(pinned(self.cpu, [*self.owner, str(self.bin / tool), *arguments]),
                       check=True, capture_output=True, timeout=600)

    def start(self, settings: dict[str, str]) -> None:
        options = " ".join([f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1",
                            *(f"-c {name}={value}" for name, value in settings.items())])
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-o",
                  options, "-w", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def cpu_seconds(self) -> float:
        """CPU time of the postmaster and its live children (backends, WAL sender, startup)."""
        try:
            postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError):
            return 0.0
        return tree_cpu_seconds(postmaster)

    def destroy(self) -> None:
        if (self.data / "postmaster.pid").exists():
            try:
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
            except subprocess.SubprocessError:
                postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
                os.kill(postmaster, signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)


def _children(pid: int) -> list[int]:
    try:
        return [int(child) for child in
                Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def tree_cpu_seconds(root: int) -> float:
    """CPU time (user + system) of a process and its live children."""
    ticks = 0
    for pid in [root, *_children(root)]:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def cpu_busy() -> dict[str, tuple[int, int]]:
    """Per CPU of the machine: (busy, all) clock ticks so far, everyone's processes."""
    found = {}
    for line in Path("/proc/stat").read_text().splitlines():
        name, *ticks = line.split()
        if name.startswith("cpu") and name != "cpu":
            values = list(map(int, ticks))
            found[name] = (sum(values) - values[3] - values[4], sum(values))
    return found


@contextmanager
def gunicorn(env: dict[str, str], port: int, cpu: str,
             log: Path) -> Iterator[subprocess.Popen]:
    """egis as deployed (deploy/gunicorn.conf.py) on `port`, pinned to `cpu`."""
    with log.open("ab") as output:
        server = subprocess.Popen(pinned(cpu, [
            sys.executable, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py",
            "--no-control-socket", "wsgi:app"]), cwd=ROOT, env=env, stdout=output,
            stderr=subprocess.STDOUT)
    try:
        wait_for(f"http://127.0.0.1:{port}/healthz")
        yield server
    finally:
        server.terminate()
        server.wait(timeout=60)


def server_env(primary: Server, port: int, scratch: Path) -> dict[str, str]:
    env = {**bench_env(primary.url(DATABASE), port, 3, 4),
           "EGIS_RATE_LIMIT_MCP": '"100000000/minute"',
           "PROMETHEUS_MULTIPROC_DIR": tempfile.mkdtemp(prefix="metrics-", dir=scratch)}
    del env["GUNICORN_WORKERS"], env["GUNICORN_THREADS"]  # as deployed: cores + 1, 4 threads
    return env


class Agents:
    """`count` threads, each calling READS in turn through /api/mcp until stopped."""

    def __init__(self, port: int, key: str, count: int) -> None:
        self.url, self.count = f"http://127.0.0.1:{port}/api/mcp", count
        self.headers = {"Authorization": f"Bearer {key}", "Accept": "application/json",
                        "Content-Type": "application/json", "MCP-Protocol-Version": PROTOCOL}
        self.stop = threading.Event()
        self.answered = 0
        self.failed: list[str] = []
        self.threads = [threading.Thread(target=self._loop, args=(n,)) for n in range(count)]

    def _loop(self, offset: int) -> None:
        os.sched_setaffinity(0, {int(STANDBY_CPU)})  # this thread: the agents' machine
        number = offset * (len(READS) // max(self.count, 1))
        while not self.stop.is_set():
            label, tool, arguments = READS[number % len(READS)]
            number += 1
            body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                 "params": {"name": tool, "arguments": arguments}})
            request = urllib.request.Request(self.url, data=body, headers=self.headers)
            with urllib.request.urlopen(request, timeout=60) as response:
                result = orjson.loads(response.read()).get("result", {})
            if result.get("isError"):
                self.failed.append(f"{label}: {result['content'][0]['text'][:120]}")
            self.answered += 1

    def __enter__(self) -> "Agents":
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=120)


def prepare(primary: Server, scratch: Path, args: argparse.Namespace) -> dict[str, str]:
    """Seed the primary; a write key and a server key of bench.example."""
    env = {**os.environ, "EGIS_BENCH_PG_ADMIN_URL": primary.url()}
    subprocess.run(pinned(INGEST_CPU, [
        sys.executable, "-m", "bench.harness.seed", "--events", str(args.events), "--days",
        str(args.days), "--database", DATABASE]), cwd=ROOT, env=env, check=True)
    cli = bench_env(primary.url(DATABASE), 0, 3, 4)
    flask("sites", "update", "bench.example", "--monthly-quota", "2000000000", env=cli)
    return {kind: flask("keys", "create", "bench.example", "--kind", kind, env=cli)
            .splitlines()[-1] for kind in ("write", "server")}


def measure(phase: str, primary: Server, standby: Server, keys: dict[str, str], scratch: Path,
            args: argparse.Namespace) -> dict[str, float]:
    port, agents_port = free_ports(2)
    env, agents_env = server_env(primary, port, scratch), server_env(primary, agents_port, scratch)
    if phase == "replica":
        agents_env["EGIS_READ_DATABASE_URL"] = standby.url(DATABASE)
    if args.shared:  # the agents' calls to the ingest server, which then reads as they ask
        agents_port, env = port, {**env, **agents_env, "GUNICORN_BIND": env["GUNICORN_BIND"]}
    run = f"{phase}-{time.time_ns()}"
    script_env = {"EGIS_KEY": keys["write"], "EGIS_EVENTS": "5", "EGIS_RUN": run,
                  "EGIS_WRK_THREADS": str(args.threads), "EGIS_BROWSER": "1",
                  **write_gzip_bodies(str(scratch), args.duration * 8000, 5, run,
                                      sessions=args.sessions)}
    readers = args.readers if phase in ("primary", "replica") else 0
    log = scratch / "servers.log"
    with ExitStack() as servers:
        if phase == "CPU 1 busy":  # the control: the other side saturated by anything at all
            burner = subprocess.Popen(pinned(STANDBY_CPU, ["yes"]), stdout=subprocess.DEVNULL)
            servers.callback(burner.wait, 10)
            servers.callback(burner.terminate)
        ingest = servers.enter_context(gunicorn(env, port, INGEST_CPU, log))
        if not args.shared:
            servers.enter_context(gunicorn(agents_env, agents_port, STANDBY_CPU, log))
        with Agents(agents_port, keys["server"], readers) as agents:
            time.sleep(2 if readers else 0)  # the agents' calls under way
            before = stored_events(primary.url(DATABASE))
            cpu = (primary.cpu_seconds(), standby.cpu_seconds(), tree_cpu_seconds(ingest.pid))
            busy, answered, started = cpu_busy(), agents.answered, time.monotonic()
            result = wrk("/api/events", args.duration, args.connections, args.threads,
                         script_env, INGEST_SCRIPT, port=port)
            elapsed = time.monotonic() - started
            calls = (agents.answered - answered) / elapsed
            busy_after = cpu_busy()
            used = (primary.cpu_seconds() - cpu[0], standby.cpu_seconds() - cpu[1],
                    tree_cpu_seconds(ingest.pid) - cpu[2])
            stored = (stored_events(primary.url(DATABASE)) - before) / elapsed
            shares = {name: (busy_after[name][0] - busy[name][0])
                      / max(1, busy_after[name][1] - busy[name][1]) for name in busy}
        if agents.failed:
            print(f"  {phase}: {len(agents.failed)} tool errors, e.g. {agents.failed[0]}")
    print(f"  {phase}: {stored:,.0f} events/s stored ({result['rps']:,.0f} batches/s, "
          f"non-2xx {result['non2xx']}), {calls:.2f} MCP calls/s, CPU s: primary "
          f"{used[0]:.1f}, standby {used[1]:.1f}, ingest gunicorn {used[2]:.1f}; busy: "
          + ", ".join(f"{name} {share:.0%}" for name, share in shares.items()), flush=True)
    return {"stored": stored, "calls": calls, "primary_cpu": used[0], "standby_cpu": used[1],
            "ingest_cpu": used[2], **{f"busy_{name}": share for name, share in shares.items()}}


def span(values: list[float], pattern: str) -> str:
    low, high = pattern.format(min(values)), pattern.format(max(values))
    return low if low == high else f"{low}–{high}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--duration", type=int, default=20, help="seconds of wrk per phase")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--readers", type=int, default=2, help="agents looping the reads")
    parser.add_argument("--sessions", type=int, default=100,
                        help="visits a phase's batches belong to (bench.ingest.throughput's "
                             "100: each gets a batch every 0.1 s; 10000: every ~10 s, as a "
                             "tracker sends them)")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--shared", action="store_true",
                        help="the agents call the ingest server (default: an app host of theirs)")
    args = parser.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        sys.exit("two CPUs are needed: one stands in for the replica's machine")
    os.sched_setaffinity(0, {int(INGEST_CPU)})  # this thread, and wrk that it starts
    scratch = Path(tempfile.mkdtemp(prefix="egis-replica-"))
    os.chmod(scratch, 0o755)
    primary = Server(scratch / "primary", INGEST_CPU)
    standby = None
    results: list[dict[str, dict[str, float]]] = []
    try:
        primary.start({"max_connections": "100"})
        keys = prepare(primary, scratch, args)
        standby = Server(scratch / "standby", STANDBY_CPU, primary)
        standby_settings = {"hot_standby_feedback": "on", "max_connections": "100"}
        for number in range(args.runs):
            standby.start(standby_settings)
            order = PHASES[number % len(PHASES):] + PHASES[:number % len(PHASES)]
            print(f"run {number + 1}: {', '.join(order)}, then no standby", flush=True)
            found = {phase: measure(phase, primary, standby, keys, scratch, args)
                     for phase in order}
            standby.stop()
            found["no standby"] = measure("no standby", primary, standby, keys, scratch, args)
            results.append(found)
    finally:
        for server in (standby, primary):
            if server is not None:
                server.destroy()
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\n{args.events:,} events seeded over {args.days} days; {args.readers} agents "
          f"looping {len(READS)} calls; wrk {args.connections} connections, {args.duration} s "
          f"a phase; {args.runs} runs\n")
    print("| phase | events/s stored | / alone (same run) | MCP calls/s | CPU s: primary | "
          "standby | ingest gunicorn | CPU 0 busy | CPU 1 busy |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for phase in (*PHASES, "no standby"):
        rows = [run[phase] for run in results]
        ratios = [run[phase]["stored"] / run["alone"]["stored"] for run in results]
        print(f"| {phase} | {span([r['stored'] for r in rows], '{:,.0f}')} | "
              f"{span(ratios, '{:.2f}')} (median {median(ratios):.2f}) | "
              f"{span([r['calls'] for r in rows], '{:.2f}')} | "
              + " | ".join(span([r[key] for r in rows], pattern) for key, pattern in (
                  ("primary_cpu", "{:.1f}"), ("standby_cpu", "{:.1f}"), ("ingest_cpu", "{:.1f}"),
                  ("busy_cpu0", "{:.0%}"), ("busy_cpu1", "{:.0%}"))) + " |")


if __name__ == "__main__":
    main()
