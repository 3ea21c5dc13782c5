"""Ingest benchmark: a real WSGI server + PostgreSQL, loaded by wrk, on this machine.

    python bench/ingest.py [--server gunicorn|granian] [--workers N] [--duration 20]
                           [--connections 16] [--rate-limit-storage redis://127.0.0.1:6379]

Creates a database of its own (egis_bench_<pid>, dropped at the end), a site with an unlimited
quota and a write key, starts gunicorn with deploy/gunicorn.conf.py (or granian with
deploy/granian_server.py, in the same process shape), on a free port with no proxy in front, and
measures in one run:
  * GET /healthz (the no-op baseline: the server + Flask, no database),
  * POST /api/events with 50-event batches, 5-event gzip-compressed batches (the tracker's
    usual request) and 1-event batches, each sent as a browser's (Origin, a current browser's
    User-Agent, client hints, Accept-Language, an X-Forwarded-For client address, the
    fingerprint's screenWidth: the visit context is derived) unless --backend says otherwise,
counting events actually stored in PostgreSQL (not responses) per second, and each worker's
peak resident memory. Needs wrk (apt-get install wrk). Prints a Markdown table with the
ratios to the no-op baseline. The rate limits count in each worker's memory unless
--rate-limit-storage names the Redis the deployment uses (deploy/egis.service), whose client
library and round trips are then measured too (keys under a prefix of this run's own).
"""
import argparse
import gzip
import json
import os
import pwd
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg2
from pg import admin, database_url, free_ports, run_database

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = run_database("bench")
DB_URL = database_url(DB_NAME)


def batch_body(batch_id: str, run: str, number: int, per_batch: int, compressed: bool,
               one_page: bool = False, sessions: int = 100) -> bytes:
    """A batch of `per_batch` page views as bench/ingest.lua sends it, gzip-compressed as the
    tracker sends it when `compressed`; with `one_page`, as the tracker's batches mostly are:
    a page view and what followed it on that page (scroll, click, heartbeat). The batches of a
    run belong to `sessions` visits in turn."""
    events = [{"type": "pageview", "timestamp": 1763700000000,
               "pageUrl": f"https://bench.example/page/{i + 1}" + (
                   "?utm_source=newsletter&utm_medium=email&utm_campaign=spring" if i == 0
                   else ""),
               "pageTitle": f"Page {i + 1}", "referrer": "https://www.google.com/",
               "properties": {"utm_source": "news", "i": i + 1}}
              for i in range(per_batch)]
    if one_page:
        followers = ("scroll", "click", "heartbeat")
        events[1:] = [{"type": followers[i % len(followers)], "timestamp": 1763700000000 + i,
                       "pageUrl": events[0]["pageUrl"], "properties": {"i": i}}
                      for i in range(1, per_batch)]
    body = json.dumps({"id": batch_id, "sessionId": f"s-{run}-{number % sessions}",
                       "anonymousId": f"a-{run}", "timestamp": 1763700001000,
                       "compressed": compressed, "fingerprint": {"screenWidth": 1280},
                       "events": events}).encode()
    return gzip.compress(body, compresslevel=6) if compressed else body


def write_gzip_bodies(directory: str, count: int, per_batch: int, run: str,
                      uuid_ids: bool = False, one_page: bool = False,
                      sessions: int = 100) -> dict[str, str]:
    """`count` gzip-compressed batches with distinct ids, and the env that tells ingest.lua.

    The ids are `run-number`, or random UUIDs as the tracker sends them with `uuid_ids`;
    `one_page` and `sessions`: batch_body's.
    """
    bodies_path, index_path = f"{directory}/bodies", f"{directory}/index"
    offset = 0
    with open(bodies_path, "wb") as bodies, open(index_path, "w") as index:
        for number in range(count):
            batch_id = str(uuid.uuid4()) if uuid_ids else f"{run}-{number}"
            body = batch_body(batch_id, run, number, per_batch, compressed=True,
                              one_page=one_page, sessions=sessions)
            bodies.write(body)
            index.write(f"{offset} {len(body)}\n")
            offset += len(body)
    return {"EGIS_BODIES": bodies_path, "EGIS_BODY_INDEX": index_path}


def worker_memory_mib(master_pid: int) -> list[dict[str, float]]:
    """Each worker's (the master's children's) memory in MiB: peak resident set (`VmHWM`, shared
    pages of the preloaded app included), and now its proportional (`Pss`: shared pages divided
    among the processes that share them) and unique set (`Private_*`: what stopping it frees)."""
    workers = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/status") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
            if int(fields["PPid"]) != master_pid or "VmHWM" not in fields:
                continue
            with open(f"/proc/{pid}/smaps_rollup") as rollup:
                sizes = {name: int(value.split()[0]) for name, value in
                         (line.split(":", 1) for line in rollup if line.endswith("kB\n"))}
        except OSError:
            continue
        workers.append({"peak_rss": int(fields["VmHWM"].split()[0]) / 1024,
                        "pss": sizes["Pss"] / 1024,
                        "uss": (sizes["Private_Clean"] + sizes["Private_Dirty"]) / 1024})
    return sorted(workers, key=lambda worker: worker["peak_rss"])


def stored_events(url: str) -> int:
    connection = psycopg2.connect(url)
    cursor = connection.cursor()
    cursor.execute("SELECT count(*) FROM event")
    (count,) = cursor.fetchone()
    connection.close()
    return count


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


def flask(*args: str, env: dict[str, str], root: Path = ROOT) -> str:
    """The `flask` CLI of the tree at `root`."""
    return subprocess.run([sys.executable, "-m", "flask", *args], cwd=root, env=env, check=True,
                          capture_output=True, text=True).stdout


@contextmanager
def serving(server: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """The server, stopped (SIGTERM, then waited for) when the block ends, however it ends."""
    try:
        yield server
    finally:
        server.terminate()
        server.wait(timeout=30)


def start_gunicorn(env: dict[str, str], port: int, root: Path = ROOT) -> subprocess.Popen:
    """gunicorn with deploy/gunicorn.conf.py (GUNICORN_BIND in `env`) serving the code in
    `root` (this checkout, or another tree of the project: bench/visit.py), once it answers."""
    server = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py",
                               "--no-control-socket", "wsgi:app"], cwd=root, env=env)
    wait_for(f"http://127.0.0.1:{port}/healthz")
    return server


def start_granian(env: dict[str, str], port: int, workers: int, threads: int,
                  scratch: str) -> subprocess.Popen:
    """granian as deployed (deploy/granian_server.py), `workers` x `threads`, once it answers."""
    server = subprocess.Popen(
        [sys.executable, "deploy/granian_server.py", "--log-level", "warning"], cwd=ROOT,
        env={**env, "GRANIAN_HOST": "127.0.0.1", "GRANIAN_PORT": str(port),
             "GRANIAN_WORKERS": str(workers), "GRANIAN_BLOCKING_THREADS": str(threads),
             "PROMETHEUS_MULTIPROC_DIR": tempfile.mkdtemp(prefix="metrics-", dir=scratch)})
    wait_for(f"http://127.0.0.1:{port}/healthz")
    return server


def start_server(name: str, env: dict[str, str], port: int, args: argparse.Namespace,
                 scratch: str) -> subprocess.Popen:
    """gunicorn or granian (`name`) on `port`, args.workers x args.worker_threads, once it
    answers."""
    if name == "gunicorn":
        return start_gunicorn(env, port)  # its shape is in `env` (bench_env)
    return start_granian(env, port, args.workers, args.worker_threads, scratch)


def wait_for(url: str) -> None:
    """Poll `url` until it answers (30 s at most)."""
    for _ in range(150):
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer")


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


def bench_env(db_url: str, port: int, workers: int, threads: int) -> dict[str, str]:
    """The server's environment: the bench database, rate limits out of the load's reach, one
    trusted proxy hop (the browser requests' X-Forwarded-For is their client address)."""
    return {**os.environ, "DATABASE_URL": db_url, "FLASK_APP": "wsgi.py",
            "EGIS_TRUSTED_PROXIES": "1",
            "EGIS_RATE_LIMIT_KEY": '"100000000/minute"',
            "EGIS_RATE_LIMIT_IP": '"100000000/minute"',
            "GUNICORN_BIND": f"127.0.0.1:{port}", "GUNICORN_WORKERS": str(workers),
            "GUNICORN_THREADS": str(threads), "GUNICORN_LOGLEVEL": "warning"}


def create_bench_site(db_name: str, env: dict[str, str], commit_delay: int = 0,
                      root: Path = ROOT) -> str:
    """A fresh database `db_name`, migrated by the tree at `root`, with a pro site and no quota
    in reach; its write key."""
    admin(f"DROP DATABASE IF EXISTS {db_name} WITH (FORCE)")
    admin(f"CREATE DATABASE {db_name}")
    if commit_delay:
        admin(f"ALTER DATABASE {db_name} SET commit_delay = {commit_delay}")
        admin(f"ALTER DATABASE {db_name} SET commit_siblings = 1")
    flask("db", "upgrade", env=env, root=root)
    flask("sites", "create", "bench.example", "--plan", "pro", "--monthly-quota", "2000000000",
          env=env, root=root)
    return flask("keys", "create", "bench.example", "--kind", "write", env=env,
                 root=root).splitlines()[-1]


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
                 script_env, str(ROOT / "bench" / "ingest.lua"), port=port,
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


def main() -> None:
    parser = argparse.ArgumentParser()
    load_arguments(parser)
    parser.add_argument("--server", choices=("gunicorn", "granian"), default="gunicorn")
    parser.add_argument("--commit-delay", type=int, default=0,
                        help="PostgreSQL commit_delay (microseconds) for the bench database, "
                             "with commit_siblings 1")
    parser.add_argument("--rate-limit-storage", default="memory://",
                        help="where the rate limits count (EGIS_RATELIMIT_STORAGE_URI)")
    parser.add_argument("--backend", action="store_true",
                        help="send the batches as a backend does (no Origin, no browser "
                             "headers): no visit context")
    args = parser.parse_args()

    [port] = free_ports(1)
    env = {**bench_env(DB_URL, port, args.workers, args.worker_threads),
           "EGIS_RATELIMIT_STORAGE_URI": args.rate_limit_storage,
           "EGIS_RATELIMIT_KEY_PREFIX": f"egis-bench-{uuid.uuid4().hex[:8]}"}
    key = create_bench_site(DB_NAME, env, args.commit_delay)
    scratch = tempfile.mkdtemp(prefix="egis-bench-")
    try:
        with serving(start_server(args.server, env, port, args, scratch)) as server:
            time.sleep(2)  # let every worker finish warming up
            rows = measure_loads(port, key, DB_URL, args, scratch)
            memory = worker_memory_mib(server.pid)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        admin(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")

    print(f"\n{args.workers} {args.server} workers x {args.worker_threads} threads, "
          f"wrk -t{args.threads} -c{args.connections} -d{args.duration}s, "
          f"{os.cpu_count()} cores shared by wrk, {args.server} and PostgreSQL, "
          f"commit_delay {args.commit_delay} us, rate limits in {args.rate_limit_storage}\n")
    print(f"| endpoint | requests/s | vs no-op | stored events/s | p99 | non-2xx "
          f"| CPU ms/request: {args.server} / PostgreSQL / wrk | machine busy |")
    print("|---|---|---|---|---|---|---|---|")
    noop = rows[0][3]
    for name, rps, stored, result in rows:
        stored_text = f"{stored:,.0f}" if stored is not None else "-"
        cpu = result["cpu"]
        print(f"| {name} | {rps:,.0f} | {rps / noop['rps']:.2f} | {stored_text} | "
              f"{result['p99']} | {result['non2xx']} | {cpu[args.server]:.2f} / "
              f"{cpu['postgres']:.2f} / {cpu['wrk']:.2f} | {result['busy']:.0%} |")
    print("\nper worker, MiB (peak RSS / PSS / unique at the end): " + ", ".join(
        f"{worker['peak_rss']:.1f} / {worker['pss']:.0f} / {worker['uss']:.0f}"
        for worker in memory))


if __name__ == "__main__":
    main()
