"""Ingest benchmark: a real gunicorn + PostgreSQL, loaded by wrk, on this machine.

    python bench/ingest.py [--workers N] [--duration 20] [--connections 16]

Creates a throwaway database (egis_bench), a site with an unlimited quota and a write key,
starts gunicorn with deploy/gunicorn.conf.py, and measures in one run:
  * GET /healthz (the no-op baseline: gunicorn + Flask, no database),
  * POST /api/events with 50-event batches, 5-event gzip-compressed batches (the tracker's
    usual request) and 1-event batches,
counting events actually stored in PostgreSQL (not responses) per second, and each gunicorn
worker's peak resident memory. Needs wrk (apt-get install wrk). Prints a Markdown table with the
ratios to the no-op baseline.
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
from pathlib import Path

import psycopg2
from pg import admin, database_url

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "egis_bench"
DB_URL = database_url(DB_NAME)
PORT = 8765



def write_gzip_bodies(directory: str, count: int, per_batch: int, run: str) -> dict[str, str]:
    """`count` gzip-compressed batches with distinct ids, and the env that tells ingest.lua."""
    events = [{"type": "pageview", "timestamp": 1763700000000,
               "pageUrl": f"https://bench.example/page/{i}", "pageTitle": f"Page {i}",
               "referrer": "https://www.google.com/", "properties": {"utm_source": "news", "i": i}}
              for i in range(per_batch)]
    bodies_path, index_path = f"{directory}/bodies", f"{directory}/index"
    offset = 0
    with open(bodies_path, "wb") as bodies, open(index_path, "w") as index:
        for number in range(count):
            body = gzip.compress(json.dumps({
                "id": f"{run}-{number}", "sessionId": f"s-{run}-{number % 100}",
                "anonymousId": f"a-{run}", "timestamp": 1763700001000, "compressed": True,
                "events": events}).encode(), compresslevel=6)
            bodies.write(body)
            index.write(f"{offset} {len(body)}\n")
            offset += len(body)
    return {"EGIS_BODIES": bodies_path, "EGIS_BODY_INDEX": index_path}


def worker_peak_rss_mib(master_pid: int) -> list[float]:
    """Peak resident set (VmHWM) of each gunicorn worker, the master's children."""
    peaks = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/status") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
        except OSError:
            continue
        if int(fields["PPid"]) == master_pid and "VmHWM" in fields:
            peaks.append(int(fields["VmHWM"].split()[0]) / 1024)
    return sorted(peaks)


def stored_events() -> int:
    connection = psycopg2.connect(DB_URL)
    cursor = connection.cursor()
    cursor.execute("SELECT count(*) FROM event")
    (count,) = cursor.fetchone()
    connection.close()
    return count


def cpu_ticks() -> dict[str, int]:
    """CPU time (clock ticks, user + system) of gunicorn, PostgreSQL, wrk and the machine."""
    postgres_uid = pwd.getpwnam("postgres").pw_uid
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # wrk, once it has been waited for
    totals = {"gunicorn": 0, "postgres": 0,
              "wrk": round((children.ru_utime + children.ru_stime) * os.sysconf("SC_CLK_TCK"))}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as stat, open(f"/proc/{pid}/cmdline", "rb") as cmd:
                fields = stat.read().rsplit(")", 1)[1].split()
                command = cmd.read().replace(b"\0", b" ").decode(errors="replace")
            uid = os.stat(f"/proc/{pid}").st_uid
        except OSError:
            continue
        used = int(fields[11]) + int(fields[12])
        if "gunicorn" in command:
            totals["gunicorn"] += used
        elif uid == postgres_uid:
            totals["postgres"] += used
    with open("/proc/stat") as stat:
        cpu = list(map(int, stat.readline().split()[1:]))
    totals["busy"] = sum(cpu) - cpu[3] - cpu[4]
    totals["all"] = sum(cpu)
    return totals


def flask(*args: str, env: dict[str, str]) -> str:
    return subprocess.run([sys.executable, "-m", "flask", *args], cwd=ROOT, env=env, check=True,
                          capture_output=True, text=True).stdout


def start_gunicorn(env: dict[str, str], port: int) -> subprocess.Popen:
    """gunicorn with deploy/gunicorn.conf.py (GUNICORN_BIND in `env`), once it answers."""
    server = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py",
                               "--no-control-socket", "wsgi:app"], cwd=ROOT, env=env)
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
            break
        except OSError:
            time.sleep(0.2)
    return server


def wrk(path: str, duration: int, connections: int, threads: int,
        script_env: dict[str, str] | None = None, script: str | None = None) -> dict[str, float]:
    command = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--latency"]
    if script:
        command += ["-s", script]
    command.append(f"http://127.0.0.1:{PORT}{path}")
    before = cpu_ticks()
    output = subprocess.run(command, env={**os.environ, **(script_env or {})}, check=True,
                            capture_output=True, text=True).stdout
    after = cpu_ticks()
    requests = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    p99 = re.search(r"99%\s+([\d.]+)(\w+)", output)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    total = int(re.search(r"(\d+) requests in", output).group(1))
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    per_request = {name: (after[name] - before[name]) * tick_ms / total
                   for name in ("gunicorn", "postgres", "wrk")}
    return {"rps": requests, "p99": f"{p99.group(1)}{p99.group(2)}" if p99 else "?",
            "non2xx": int(errors.group(1)) if errors else 0, "cpu": per_request,
            "busy": (after["busy"] - before["busy"]) / (after["all"] - before["all"])}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--duration", type=int, default=20)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    parser.add_argument("--worker-threads", type=int, default=4,
                        help="gunicorn threads per worker")
    parser.add_argument("--commit-delay", type=int, default=0,
                        help="PostgreSQL commit_delay (microseconds) for the bench database, "
                             "with commit_siblings 1")
    args = parser.parse_args()

    admin(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
    admin(f"CREATE DATABASE {DB_NAME}")
    if args.commit_delay:
        admin(f"ALTER DATABASE {DB_NAME} SET commit_delay = {args.commit_delay}")
        admin(f"ALTER DATABASE {DB_NAME} SET commit_siblings = 1")
    env = {**os.environ, "DATABASE_URL": DB_URL, "FLASK_APP": "wsgi.py",
           "EGIS_RATE_LIMIT_KEY": '"100000000/minute"', "EGIS_RATE_LIMIT_IP": '"100000000/minute"',
           "GUNICORN_BIND": f"127.0.0.1:{PORT}", "GUNICORN_WORKERS": str(args.workers),
           "GUNICORN_THREADS": str(args.worker_threads),
           "GUNICORN_LOGLEVEL": "warning"}
    flask("db", "upgrade", env=env)
    flask("sites", "create", "bench.example", "--plan", "pro", "--monthly-quota", "2000000000",
          env=env)
    key = flask("keys", "create", "bench.example", "--kind", "write", env=env).splitlines()[-1]

    scratch = tempfile.mkdtemp(prefix="egis-bench-")
    server = start_gunicorn(env, PORT)
    try:
        time.sleep(2)  # let every worker finish warming up
        rows = []
        noop = wrk("/healthz", args.duration, args.connections, args.threads)
        rows.append(("GET /healthz (no-op baseline)", noop["rps"], None, noop))
        for per_batch, compressed in ((50, False), (5, True), (1, False)):
            run = f"{per_batch}-{int(time.time())}"
            script_env = {"EGIS_KEY": key, "EGIS_EVENTS": str(per_batch), "EGIS_RUN": run,
                          "EGIS_WRK_THREADS": str(args.threads)}
            if compressed:
                script_env |= write_gzip_bodies(scratch, args.duration * 8000, per_batch, run)
            before = stored_events()
            started = time.monotonic()
            result = wrk("/api/events", args.duration, args.connections, args.threads,
                         script_env, str(ROOT / "bench" / "ingest.lua"))
            elapsed = time.monotonic() - started
            stored = (stored_events() - before) / elapsed
            label = f"{per_batch}-event batches" + (", gzip" if compressed else "")
            rows.append((f"POST /api/events, {label}", result["rps"], stored, result))
        peaks = worker_peak_rss_mib(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=20)
        shutil.rmtree(scratch, ignore_errors=True)

    print(f"\n{args.workers} gunicorn workers x {args.worker_threads} threads, "
          f"wrk -t{args.threads} -c{args.connections} -d{args.duration}s, "
          f"{os.cpu_count()} cores shared by wrk, gunicorn and PostgreSQL, "
          f"commit_delay {args.commit_delay} us\n")
    print("| endpoint | requests/s | vs no-op | stored events/s | p99 | non-2xx "
          "| CPU ms/request: gunicorn / PostgreSQL / wrk | machine busy |")
    print("|---|---|---|---|---|---|---|---|")
    for name, rps, stored, result in rows:
        stored_text = f"{stored:,.0f}" if stored is not None else "-"
        cpu = result["cpu"]
        print(f"| {name} | {rps:,.0f} | {rps / noop['rps']:.2f} | {stored_text} | "
              f"{result['p99']} | {result['non2xx']} | {cpu['gunicorn']:.2f} / "
              f"{cpu['postgres']:.2f} / {cpu['wrk']:.2f} | {result['busy']:.0%} |")
    print("\npeak RSS per worker (MiB): " + ", ".join(f"{peak:.0f}" for peak in peaks))


if __name__ == "__main__":
    main()
