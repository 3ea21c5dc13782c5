"""Instructions per request, counted by valgrind: figures that do not swing with the machine.

    python -m bench.ingest.instructions [--requests 400] [--cpu]

wrk's requests/s on this machine move by up to 40 % within minutes, so a change worth a few per
cent of a request cannot be seen there. valgrind's callgrind counts the instructions the CPU
executes instead, and gives the same count, to a tenth of a per cent, for the same code and
inputs whatever else the machine is doing. For each load (the no-op GET /healthz, a one-event
batch, five-event gzip batches of five pages and of one page, as the tracker's mostly are)
this creates a database of its own (egis_instructions_<pid>, dropped at the end) with a site
and a write key, then runs the WSGI app in one Python process under callgrind: the app is
built and warmed up, and `--requests` requests, each a new batch, are passed to it as a WSGI
server would. Only those requests are counted (callgrind collects inside one `eval`, which
nothing else calls). Counted: the app's Python and C code and the database client, in this
process, and, for a tree that merges the rollups after ingest (app.rollups), one merge of the
measured requests' batches at their end, as a busy worker's timer takes many at once (the
warm-up's are merged before, uncounted). Not counted: the WSGI server's own HTTP work, the
kernel (socket writes, the log line's write) and PostgreSQL's side (bench.ingest.instructions_pg
counts it). Needs valgrind (Debian's package); takes about a minute per load.

The last load sends again, after the warm-up, the very batches the warm-up stored: each request
is a duplicate (a tracker's retry whose first answer was lost, or the keepalive copy of a batch
in flight when its page was left).

With --cpu, the same requests run without valgrind and the process's CPU time (user and
system, `time.process_time`) is read around them instead: milliseconds per request, what the
app costs a server's worker on top of the server's own HTTP work. These swing with the machine
like any time; read them against the no-op of the same run.
"""
import argparse
import importlib
import io
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.harness import ROOT
from bench.harness.batches import batch_body
from bench.harness.database import admin, create_bench_site, database_url, run_database
from bench.harness.servers import bench_env
from bench.harness.trees import run_tree

SERVE = [sys.executable, "-m", "bench.ingest.instructions", "--serve"]  # from ROOT: this bench
# load: (path, events per batch, gzip, a duplicate of a stored batch, one page: batch_body's)
LOADS = {"GET /healthz (no-op)": ("/healthz", 0, False, False, False),
         "POST /api/events, 1 event": ("/api/events", 1, False, False, False),
         "POST /api/events, 5 events, gzip": ("/api/events", 5, True, False, False),
         "POST /api/events, 5 events, gzip, one page": ("/api/events", 5, True, False, True),
         "POST /api/events, 5 events, gzip, a duplicate": ("/api/events", 5, True, True, False),
         "POST /api/events, 50 events": ("/api/events", 50, False, False, False)}
# No merge timer: the measured requests' merge is one, counted (rollup_merge).
SERVE_ENV = {"EGIS_ROLLUP_MERGE_SECONDS": "3600"}
USER_AGENT = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
              "Chrome/140.0.0.0 Safari/537.36")


def wsgi_environ(path: str, key: str, body: bytes, compressed: bool) -> dict:
    environ = {"REQUEST_METHOD": "POST" if body else "GET", "PATH_INFO": path,
               "QUERY_STRING": "", "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8000",
               "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
               "HTTP_HOST": "127.0.0.1:8000", "HTTP_USER_AGENT": USER_AGENT,
               "wsgi.input": io.BytesIO(body), "wsgi.url_scheme": "http",
               "wsgi.errors": sys.stderr, "wsgi.multithread": True, "wsgi.multiprocess": True,
               "wsgi.run_once": False, "wsgi.version": (1, 0)}
    if body:
        environ.update({"CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)),
                        "HTTP_X_API_KEY": key})
    if compressed:
        environ["HTTP_CONTENT_ENCODING"] = "gzip"
    return environ


def serve_requests(load: str, key: str, count: int) -> float:
    """Build the app, warm it up, then answer `count` requests inside the one `eval` that
    callgrind counts; returns the CPU seconds those requests took."""
    from app.crawlers import user_agents
    from wsgi import app

    path, per_batch, compressed, duplicate, one_page = LOADS[load]

    def environs(first: int) -> list[dict]:
        return [wsgi_environ(path, key, batch_body(f"instructions-{os.getpid()}-{first + number}",
                                                   "instructions", first + number, per_batch,
                                                   compressed, one_page) if per_batch else b"",
                             compressed)
                for number in range(count)]

    def answer(environ: dict) -> None:
        statuses = []
        chunks = app(environ, lambda status, headers, exc_info=None: statuses.append(status))
        b"".join(chunks)
        getattr(chunks, "close", lambda: None)()
        if not statuses[0].startswith("200"):
            raise RuntimeError(f"{load}: {statuses[0]}")

    user_agents.warm_up()
    for environ in environs(count):  # caches, pooled connection, prepared statement
        answer(environ)
    merge = rollup_merge(app)
    merge()  # the warm-up's batches: not counted
    measured = environs(count if duplicate else 0)
    started = time.process_time()
    eval(compile("for environ in measured: answer(environ)\nmerge()", "measured", "exec"),
         {"measured": measured, "answer": answer, "merge": merge})
    return time.process_time() - started


def rollup_merge(app: Any) -> Callable[[], None]:
    """What merges the stored batches into the rollups, counted with the requests: a tree that
    merges after ingest (app.rollups.merging.merge; its timer held off by EGIS_ROLLUP_MERGE_SECONDS,
    set by `serve_requests`' caller) merges them all at once, as a busy worker's timer does;
    for a tree that merged in each request's statement, nothing."""
    rollups = None
    for module in ("app.rollups.merging", "app.rollups"):  # this tree's place, an older one's
        try:
            rollups = importlib.import_module(module)
        except ModuleNotFoundError:  # a tree from before the rollups
            continue
        break
    if not hasattr(rollups, "merge"):
        return lambda: None
    from models import database

    def merge() -> None:
        with app.app_context(), database.connection_context():
            rollups.merge()

    return merge


def count_instructions(load: str, key: str, env: dict[str, str], count: int,
                       root: Path = ROOT) -> int:
    """The instructions of `count` requests (after as many to warm up) served by the app of the
    tree at `root` (bench.ingest.instructions_pg serves a base tree's too)."""
    command = ["valgrind", "--tool=callgrind", "--collect-atstart=no",
               "--toggle-collect=builtin_eval", "--callgrind-out-file=/dev/null",
               *SERVE, load, "--key", key, "--requests", str(count), "--root", str(root)]
    # The same hash seed in every run: dict and set layouts, and so the counts, repeat.
    result = subprocess.run(command, cwd=ROOT, env={**env, **SERVE_ENV, "PYTHONHASHSEED": "0"},
                            capture_output=True, text=True, check=True)
    return int(re.search(r"Collected : (\d+)", result.stderr).group(1))


def cpu_milliseconds(load: str, key: str, env: dict[str, str], count: int) -> float:
    """CPU per request, the same requests in a process of their own, without valgrind."""
    command = [*SERVE, load, "--key", key, "--requests", str(count)]
    result = subprocess.run(command, cwd=ROOT, env={**env, **SERVE_ENV}, capture_output=True,
                            text=True, check=True)
    return 1000 * float(result.stdout.split()[-1]) / count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--cpu", action="store_true",
                        help="CPU milliseconds per request, without valgrind")
    parser.add_argument("--serve", choices=LOADS, help=argparse.SUPPRESS)
    parser.add_argument("--key", help=argparse.SUPPRESS)
    parser.add_argument("--root", default=str(ROOT), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        run_tree(Path(args.root))
        print(serve_requests(args.serve, args.key, args.requests))
        return

    db_name = run_database("instructions")
    env = bench_env(database_url(db_name), 8000, 1, 1)
    try:
        key = create_bench_site(db_name, env)
        if args.cpu:
            costs = {load: cpu_milliseconds(load, key, env, args.requests) for load in LOADS}
        else:
            costs = {load: count_instructions(load, key, env, args.requests) / args.requests
                     for load in LOADS}
    finally:
        admin(f"DROP DATABASE IF EXISTS {db_name} WITH (FORCE)")
    noop = costs["GET /healthz (no-op)"]
    where, unit, figure = (("without valgrind", "CPU ms", "{:,.3f}") if args.cpu
                           else ("under callgrind", "instructions", "{:,.0f}"))
    print(f"\n{args.requests} requests each, in one process {where}\n")
    print(f"| load | {unit} per request | vs the no-op |")
    print("|---|---|---|")
    for load, cost in costs.items():
        print(f"| {load} | {figure.format(cost)} | {cost / noop:.2f} |")


if __name__ == "__main__":
    main()
