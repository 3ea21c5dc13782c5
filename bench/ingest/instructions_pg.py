"""Instructions per request on both sides, the app's and PostgreSQL's, this checkout against a
base tree, counted by valgrind: a write-path comparison that does not swing with the machine.

    python -m bench.ingest.instructions_pg [--base-ref REF | --base-dir DIR] [--requests 60]
                                           [--profiles DIR] [--group 4 --batches 200] [--loads ...]

bench.ingest.instructions counts the app's instructions only; a change to what the store statement
does is PostgreSQL's work, and on this machine (its no-op moving threefold within a minute) a
throughput A/B (bench.ingest.visit) could not tell a 5 % cost from a 10 % one. Here PostgreSQL's
server runs under callgrind too. The script makes a throwaway cluster of its own (`initdb` in a
scratch directory, as the `postgres` user when run as root; a free port; nothing of the
machine's shared server is touched), one database per tree migrated by that tree's own code
with a pro site and a write key, then restarts the cluster with its postmaster under
`valgrind --tool=callgrind --trace-children=yes` (autovacuum, JIT and parallel workers off, so
that nothing but the app's statements runs), each backend writing its count when it exits.

For each load (a one-event batch and a five-event gzip batch of one page, as the tracker sends
them, or with --loads a 50-event batch, as a backend sends them; each request a new batch, one
session per 100 batches) and each tree, bench.ingest.instructions
serves `--requests` requests after as many to warm up, its process under callgrind (the app's
count: the measured requests only, and for a tree that merges the rollups after ingest their
merge), against that tree's database; then again with twice as many. Each side's count per
request is the difference of the two runs (PostgreSQL's: their backends') divided by the
difference in requests, so the connection's start, the warm-up's first plans, a merge's fixed
part and everything else done once per run cancel out: what is left is a request's share of a
merge of many, as a busy worker's timer merges (the app's part done once is printed apart; a
first run of each tree, not counted, has built the database's catalog caches and read its
tables into shared buffers). With --profiles, every run's backend
profile is kept there, for callgrind_annotate (the difference of a load's two is its requests').

Requests come one at a time: each batch is stored by the single-batch statement
(app.tracking.store), as a lone request's is. Under load a worker's concurrent batches share
the group statement, whose per-batch work is the same and whose fixed costs are shared: with
--group N, PostgreSQL's count per batch of that statement too (app.tracking.writer's):
bench.ingest.store_nodes --group N --one-page, each tree's own store.store_group, stores N batches
(not counted: a database's first groups create the month's partitions and the site), then
`--batches` 5-event batches of one page in groups of N, then twice as many; the difference of
the two runs' backends over the difference in batches. `--requests 0`: only that.

Not counted: the WSGI server's HTTP work and the kernel's (the same in both trees: the no-op's
part of bench.ingest.visit's figures). Needs valgrind and PostgreSQL's server binaries; takes about
15 minutes for the default 60 requests, and 5 more with --group 4.
"""
import argparse
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg2

from bench.harness import ROOT, database
from bench.harness.database import create_bench_site
from bench.harness.servers import bench_env
from bench.harness.trees import base_arguments, base_ref, base_root, git
from bench.ingest.instructions import count_instructions

LOADS = ("POST /api/events, 1 event", "POST /api/events, 5 events, gzip, one page",
         "POST /api/events, 50 events")
TREES = ("base", "this")
SERVER_SETTINGS = ("listen_addresses=127.0.0.1", "autovacuum=off", "jit=off",
                   "max_parallel_workers_per_gather=0", "max_connections=20")


def server_binaries() -> Path:
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))
    if not versions:
        sys.exit("PostgreSQL's server binaries (/usr/lib/postgresql/*/bin) are not installed")
    return versions[-1]


class CountedCluster:
    """A cluster in `scratch`, started plainly to set up, then under callgrind to count."""

    def __init__(self, scratch: Path) -> None:
        self.bin = server_binaries()
        self.scratch, self.data, self.counts = scratch, scratch / "data", scratch / "counts"
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.as_owner: list[str] = []
        if os.geteuid() == 0:  # initdb and postgres refuse root
            owner = pwd.getpwnam("postgres")
            os.chown(scratch, owner.pw_uid, owner.pw_gid)
            self.as_owner = ["runuser", "-u", "postgres", "--"]
        self.counts.mkdir()
        os.chmod(self.counts, 0o777)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "--no-sync")
        self.counted: subprocess.Popen | None = None

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _options(self) -> list[str]:
        return ["-p", str(self.port), "-k", str(self.scratch),
                *(part for setting in SERVER_SETTINGS for part in ("-c", setting))]

    def _run(self, tool: str, *arguments: str) -> None:
        subprocess.run([*self.as_owner, str(self.bin / tool), *arguments], check=True,
                       capture_output=True, timeout=120)

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.scratch / "server.log"),
                  "-o", " ".join(self._options()), "-w", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-w", "stop")

    def start_counted(self) -> None:
        """The postmaster and every process it forks under callgrind, each writing its count
        into `counts` when it exits."""
        with open(self.scratch / "counted.log", "wb") as log:
            self.counted = subprocess.Popen(
                [*self.as_owner, "valgrind", "--tool=callgrind", "--trace-children=yes",
                 f"--callgrind-out-file={self.counts}/%p", str(self.bin / "postgres"),
                 "-D", str(self.data), *self._options()], stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.monotonic() + 180
        while True:
            try:
                psycopg2.connect(self.admin_url).close()
                return
            except psycopg2.OperationalError:
                if time.monotonic() > deadline or self.counted.poll() is not None:
                    log = (self.scratch / "counted.log").read_text(errors="replace")
                    raise RuntimeError(log[-2000:]) from None
                time.sleep(1)

    def destroy(self) -> None:
        if self.counted is not None and self.counted.poll() is None:
            self.counted.terminate()  # smart shutdown of the postmaster, through runuser
            try:
                self.counted.wait(timeout=120)
            except subprocess.TimeoutExpired:  # the postmaster, by its PID
                postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
                os.kill(postmaster, signal.SIGKILL)
        shutil.rmtree(self.scratch, ignore_errors=True)

    def finished_counts(self, known: set[str]) -> tuple[set[str], int]:
        """The count files written since `known` (the backends that have exited), once every
        one of them is complete, and their instructions in all."""
        deadline = time.monotonic() + 120
        while True:
            names = {path.name for path in self.counts.iterdir()} - known
            totals = [re.search(r"^totals: (\d+)", (self.counts / name).read_text(), re.M)
                      for name in names]
            if names and all(totals):
                return names, sum(int(total.group(1)) for total in totals)
            if time.monotonic() > deadline:
                raise RuntimeError("no backend wrote its count within two minutes")
            time.sleep(0.5)


def serve_counted(load: str, key: str, db_url: str, root: Path, requests: int) -> int:
    """bench.ingest.instructions serving `requests` requests (after as many to warm up) of the app
    in `root` under callgrind: the app's instructions in those requests."""
    return count_instructions(load, key, {**os.environ, "DATABASE_URL": db_url,
                                          "EGIS_RATE_LIMIT_KEY": '"100000000/minute"',
                                          "EGIS_RATE_LIMIT_IP": '"100000000/minute"'},
                              requests, root)


def group_counted(cluster: CountedCluster, known: set[str], db_name: str, root: Path,
                  group: int, batches: int) -> int:
    """bench.ingest.store_nodes storing `batches` batches in groups of `group` with the store code
    of `root`: the instructions of its backend."""
    subprocess.run([sys.executable, "-m", "bench.ingest.store_nodes", "--tree", str(root),
                    "--database", db_name, "--group", str(group), "--one-page",
                    "--batches", str(batches)], cwd=ROOT,
                   env={**os.environ, "EGIS_BENCH_PG_ADMIN_URL": cluster.admin_url},
                   check=True, capture_output=True)
    names, total = cluster.finished_counts(known)
    known |= names
    return total


def keep_profiles(counts: Path, names: set[str], directory: Path, label: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for number, file_name in enumerate(sorted(names)):
        shutil.copy(counts / file_name, directory / f"{label}-{number}.callgrind")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=60, help="0: only --group")
    base_arguments(parser)
    parser.add_argument("--profiles", type=Path, help="keep the backends' profiles here")
    parser.add_argument("--group", type=int, help="batches per group statement (also count it)")
    parser.add_argument("--batches", type=int, default=200, help="with --group")
    parser.add_argument("--loads", nargs="+", choices=LOADS, default=LOADS[:2],
                        help="what to count (default: the first two)")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="egis-instructions-pg-"))
    cluster = CountedCluster(scratch)
    roots = {"base": base_root(args, str(scratch)), "this": ROOT}
    database.ADMIN_URL = cluster.admin_url  # create_bench_site and database_url: on this cluster

    counts: dict[tuple[str, str], tuple[float, float]] = {}
    fixed: dict[tuple[str, str], float] = {}
    try:
        cluster.start()
        keys = {name: create_bench_site(f"egis_instructions_{name}", bench_env(
            database.database_url(f"egis_instructions_{name}"), 8000, 1, 1), root=roots[name])
            for name in TREES}
        cluster.stop()
        cluster.start_counted()
        # The postmaster's (written when it stops) and its start-up process's.
        known = {path.name for path in cluster.counts.iterdir()}
        for name in TREES:
            serve_counted(LOADS[0], keys[name], database.database_url(f"egis_instructions_{name}"),
                          roots[name], 10)
            known |= cluster.finished_counts(known)[0]
        for load in args.loads if args.requests else ():
            for name in TREES:
                app_counts, backend_counts = [], []
                for requests in (args.requests, 2 * args.requests):
                    app_counts.append(serve_counted(
                        load, keys[name], database.database_url(f"egis_instructions_{name}"),
                        roots[name], requests))
                    names, total = cluster.finished_counts(known)
                    known |= names
                    backend_counts.append(total)
                    if args.profiles:
                        keep_profiles(cluster.counts, names, args.profiles,
                                      f"{name}-{load.rsplit(', ', 1)[-1].replace(' ', '-')}"
                                      f"-{requests}")
                # Each run serves its requests twice (warm-up, then counted).
                per_request = (backend_counts[1] - backend_counts[0]) / (2 * args.requests)
                # The app's too: a merge after the counted requests (bench.ingest.instructions)
                # costs its Python once per run whatever the requests; what is left is a
                # request's share of a merge of many, as under load.
                app_per_request = (app_counts[1] - app_counts[0]) / args.requests
                counts[(load, name)] = (app_per_request, per_request)
                fixed[(load, name)] = app_counts[0] - args.requests * app_per_request
        # A first run of each tree does what a database's first groups do once (creating the
        # month's partitions, the site): not counted.
        groups = {name: [group_counted(cluster, known, f"egis_instructions_{name}", roots[name],
                                       args.group, batches)
                         for batches in (args.group, args.batches, 2 * args.batches)][1:]
                  for name in (TREES if args.group else ())}
    finally:
        cluster.destroy()  # the base tree extracted into `scratch` with it

    print(f"\nbase: {args.base_dir or base_ref(args)}; this: {ROOT} at "
          f"{git('rev-parse', '--short', 'HEAD').decode().strip()}; {args.requests} and "
          f"{2 * args.requests} requests, one at a time, under callgrind\n")
    if counts:
        print("| load | tree | app instructions per request | PostgreSQL instructions per "
              "request | both | this / base: app | PostgreSQL | both |")
        print("|---|---|---|---|---|---|---|---|")
    for load in args.loads if counts else ():
        base_app, base_pg = counts[(load, "base")]
        for name in TREES:
            app, backend = counts[(load, name)]
            ratios = (f"{app / base_app:.3f} | {backend / base_pg:.3f} | "
                      f"{(app + backend) / (base_app + base_pg):.3f}" if name == "this"
                      else " | | ")
            print(f"| {load} | {name} | {app:,.0f} | {backend:,.0f} | {app + backend:,.0f} | "
                  f"{ratios} |")
    for load in args.loads if counts else ():
        print(f"\n{load}: the app's instructions once per run, whatever its requests (a merge's "
              "fixed part, under load once per EGIS_ROLLUP_MERGE_SECONDS per worker): "
              + ", ".join(f"{name} {fixed[(load, name)]:,.0f}" for name in TREES))
    if groups:
        per_batch = {name: (runs[1] - runs[0]) / args.batches for name, runs in groups.items()}
        print(f"\nThe group statement, groups of {args.group} 5-event batches of one page "
              f"(store_nodes.py): PostgreSQL instructions per batch, base {per_batch['base']:,.0f}"
              f", this {per_batch['this']:,.0f}, this / base "
              f"{per_batch['this'] / per_batch['base']:.3f}")


if __name__ == "__main__":
    main()
