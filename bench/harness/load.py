"""wrk against a server the benchmark started: requests/s, p99 and CPU per request of each
process involved; the ingest loads (new batches through bench/harness/ingest.lua) that several
benchmarks measure; figures over several runs as ranges."""
import argparse
import os
import pwd
import re
import resource
import statistics
import subprocess
import time
from pathlib import Path

from bench.harness.batches import write_gzip_bodies
from bench.harness.database import stored_events

INGEST_SCRIPT = str(Path(__file__).with_name("ingest.lua"))

SERVER_COMMANDS = ("gunicorn", "granian", "nginx")
MS_PER_UNIT = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


# A PostgreSQL client backend's title: "postgres: <cluster>: <user> <database> <host>(<port>) ..."
BACKEND_TITLE = re.compile(r"postgres: .*?: \S+ (\S+) (?:\[local\]|[0-9a-f.:]+\(\d+\))")


def cpu_ticks(database: str | None = None) -> dict[str, int]:
    """CPU time (clock ticks, user + system) of each web server this benchmark started (by
    command line, among its descendants), PostgreSQL, wrk and the machine. With `database`,
    backends serving other databases (other people's work on a shared server) are left out of
    PostgreSQL's share."""
    postgres_uid = pwd.getpwnam("postgres").pw_uid
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # wrk, once it has been waited for
    totals = dict.fromkeys((*SERVER_COMMANDS, "postgres"), 0)
    totals["wrk"] = round((children.ru_utime + children.ru_stime) * os.sysconf("SC_CLK_TCK"))
    processes = {}  # pid: (parent pid, command line, owner, ticks used)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as stat, open(f"/proc/{pid}/cmdline", "rb") as cmd:
                fields = stat.read().rsplit(")", 1)[1].split()
                command = cmd.read().replace(b"\0", b" ").decode(errors="replace")
            uid = os.stat(f"/proc/{pid}").st_uid
        except OSError:
            continue
        processes[int(pid)] = (int(fields[1]), command, uid, int(fields[11]) + int(fields[12]))
    ours = descendants(os.getpid(), processes)
    for pid, (_parent, command, uid, used) in processes.items():
        server = next((name for name in SERVER_COMMANDS if name in command), None)
        if server:
            if pid in ours:
                totals[server] += used
        elif uid == postgres_uid:
            backend = BACKEND_TITLE.match(command)
            if database is None or backend is None or backend.group(1) == database:
                totals["postgres"] += used
    with open("/proc/stat") as stat:
        cpu = list(map(int, stat.readline().split()[1:]))
    totals["busy"] = sum(cpu) - cpu[3] - cpu[4]
    totals["all"] = sum(cpu)
    return totals


def descendants(root: int, processes: dict[int, tuple]) -> set[int]:
    """The pids under `root` in `processes` (pid: (parent pid, ...)): a server's master, its
    workers, their children."""
    children: dict[int, list[int]] = {}
    for pid, (parent, *_rest) in processes.items():
        children.setdefault(parent, []).append(pid)
    found, waiting = set(), [root]
    while waiting:
        for child in children.get(waiting.pop(), ()):
            found.add(child)
            waiting.append(child)
    return found


def wrk(path: str, duration: int, connections: int, threads: int,
        script_env: dict[str, str] | None = None, script: str | None = None, *,
        port: int, database: str | None = None) -> dict[str, float]:
    command = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--latency"]
    if script:
        command += ["-s", script]
    command.append(f"http://127.0.0.1:{port}{path}")
    before = cpu_ticks(database)
    output = subprocess.run(command, env={**os.environ, **(script_env or {})}, check=True,
                            capture_output=True, text=True).stdout
    after = cpu_ticks(database)
    requests = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    p99 = re.search(r"99%\s+([\d.]+)(\w+)", output)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    total = int(re.search(r"(\d+) requests in", output).group(1))
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    per_request = {name: (after[name] - before[name]) * tick_ms / total
                   for name in (*SERVER_COMMANDS, "postgres", "wrk")}
    return {"rps": requests, "p99": f"{p99.group(1)}{p99.group(2)}" if p99 else "?",
            "p99_ms": float(p99.group(1)) * MS_PER_UNIT[p99.group(2)] if p99 else float("nan"),
            "non2xx": int(errors.group(1)) if errors else 0, "cpu": per_request,
            "busy": (after["busy"] - before["busy"]) / (after["all"] - before["all"])}


def spread(values: list[float], pattern: str = "{:,.0f}") -> str:
    """Figures over several runs: their one value, or their range."""
    low, high = pattern.format(min(values)), pattern.format(max(values))
    return low if low == high else f"{low} – {high}"


def ranged(values: list[float], pattern: str) -> str:
    """spread()'s figures and their median."""
    return f"{spread(values, pattern)} (median {pattern.format(statistics.median(values))})"


LOADS = ((50, False), (5, True), (1, False))  # events per batch, gzip-compressed
# The tracker's batches: their latency is also measured at about half of their peak rate.
SMALL_BATCH = 5


Row = tuple[str, float, float | None, dict]


def post_batches(port: int, key: str, db_url: str, args: argparse.Namespace, scratch: str,
                 per_batch: int, compressed: bool, delay_ms: float | None = None,
                 spray: bool = False, one_page: bool = False) -> Row:
    """wrk posting new batches of `per_batch` events; with `delay_ms`, each connection pauses
    that long between requests; with `spray`, every request has a User-Agent of its own; with
    `one_page` (gzip only), batch_body's one-page batches."""
    run = f"{per_batch}-{time.time_ns()}"
    script_env = {"EGIS_KEY": key, "EGIS_EVENTS": str(per_batch), "EGIS_RUN": run,
                  "EGIS_WRK_THREADS": str(args.threads)}
    if not getattr(args, "backend", False):
        script_env["EGIS_BROWSER"] = "1"
    if spray:
        script_env["EGIS_UA_SPRAY"] = "1"
    if compressed:
        script_env |= write_gzip_bodies(scratch, args.duration * 8000, per_batch, run,
                                        one_page=one_page)
    if delay_ms is not None:
        script_env["EGIS_DELAY_MS"] = f"{delay_ms:.3f}"
    before = stored_events(db_url)
    started = time.monotonic()
    result = wrk("/api/events", args.duration, args.connections, args.threads,
                 script_env, INGEST_SCRIPT, port=port,
                 database=db_url.rsplit("/", 1)[1])
    elapsed = time.monotonic() - started
    stored = (stored_events(db_url) - before) / elapsed
    label = f"{per_batch}-event batches" + (", gzip" if compressed else "")
    if delay_ms is not None:
        label += ", at half of peak"
    if spray:
        label += ", a new User-Agent each"
    return f"POST /api/events, {label}", result["rps"], stored, result


def measure_loads(port: int, key: str, db_url: str, args: argparse.Namespace,
                  scratch: str) -> list[Row]:
    """The no-op, then each of LOADS flat out, then the small ones at about half of the rate
    they reached (each connection pausing between requests), against the server on `port`."""
    noop = wrk("/healthz", args.duration, args.connections, args.threads, port=port)
    rows = [("GET /healthz (no-op baseline)", noop["rps"], None, noop)]
    rows += [post_batches(port, key, db_url, args, scratch, per_batch, compressed)
             for per_batch, compressed in LOADS]
    for (per_batch, compressed), (_, peak, _, _) in zip(LOADS, rows[1:], strict=True):
        if per_batch <= SMALL_BATCH:
            # Half the rate is a cycle of twice the latency at peak (connections / peak, by
            # Little's law) per connection; an answer at half load takes about half of that.
            pause_ms = 1.5 * 1000 * args.connections / peak
            rows.append(post_batches(port, key, db_url, args, scratch, per_batch, compressed,
                                     delay_ms=pause_ms))
    return rows


def load_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--duration", type=int, default=20)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--worker-threads", type=int, default=4,
                        help="threads per worker")
