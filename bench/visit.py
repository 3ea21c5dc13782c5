"""What the visit context costs: this checkout against a base tree (main), in one run.

    python bench/visit.py [--base-ref main | --base-dir DIR] [--rounds 3] [--duration 8]

Extracts the base (`git archive <ref>`, default main) into a scratch directory, creates one
database of its own (`egis_visit_bench_<pid>`, migrated by this checkout, whose schema the base
can write to; dropped at the end), a pro site and its write key, then, round after round,
serves each tree in turn with the same gunicorn shape (deploy/gunicorn.conf.py, WORKERS x
THREADS, one trusted proxy hop) and measures with wrk, as bench/ingest.py does, every request a
browser's (Origin, a current browser's User-Agent, client hints, Accept-Language, a public
X-Forwarded-For address, the fingerprint's screenWidth):

- GET /healthz, the no-op baseline of that server in that round;
- 1-event batches and 5-event gzip batches (one User-Agent: the parse is cached);
- 1-event batches with a User-Agent never seen before on every request (a spray).

The order of the two trees alternates between rounds. Prints per tree and load the range over
the rounds of requests/s, of the ratio to that server's no-op, and of gunicorn's CPU per
request; then this checkout's ratio against the base for each load (its vs-no-op ratio divided
by the base's, round by round), the spray's cost against the cached request per tree, and each
worker's peak RSS.
"""
import argparse
import os
import shutil
import subprocess
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from ingest import (
    ROOT,
    bench_env,
    create_bench_site,
    load_arguments,
    post_batches,
    serving,
    spread,
    start_gunicorn,
    worker_memory_mib,
    wrk,
)
from pg import admin, database_url, free_ports, run_database

DB_NAME = run_database("visit_bench")
LOADS = (("1-event", 1, False, False), ("5-event gzip", 5, True, False),
         ("1-event, new User-Agent each", 1, False, True))


def extract(ref: str, scratch: str) -> Path:
    """The tree of `ref` in a directory of its own."""
    target = Path(scratch) / "base"
    target.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def measure(root: Path, env: dict[str, str], port: int, key: str, db_url: str,
            args: argparse.Namespace, scratch: str) -> tuple[dict[str, dict], list[dict]]:
    """Serve `root` and measure the no-op and each of LOADS; the results by load, and each
    worker's memory."""
    with serving(start_gunicorn(env, port, root)) as server:
        time.sleep(2)  # every worker warmed up
        results = {"no-op": wrk("/healthz", args.duration, args.connections, args.threads,
                                port=port)}
        for label, per_batch, compressed, spray in LOADS:
            _name, _rps, _stored, result = post_batches(
                port, key, db_url, args, scratch, per_batch, compressed, spray=spray)
            results[label] = result
        return results, worker_memory_mib(server.pid)


def main() -> None:
    parser = argparse.ArgumentParser()
    load_arguments(parser)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--base-ref", default="main", help="git ref of the base tree")
    parser.add_argument("--base-dir", help="a base tree already extracted (instead of a ref)")
    parser.set_defaults(duration=8)
    args = parser.parse_args()

    [port] = free_ports(1)
    db_url = database_url(DB_NAME)
    env = bench_env(db_url, port, args.workers, args.worker_threads)
    key = create_bench_site(DB_NAME, env)
    scratch = tempfile.mkdtemp(prefix="egis-visit-bench-")
    trees = {"base": Path(args.base_dir) if args.base_dir else extract(args.base_ref, scratch),
             "this": ROOT}
    runs: dict[str, list[dict[str, dict]]] = defaultdict(list)
    memory: dict[str, list[dict]] = defaultdict(list)
    try:
        for number in range(args.rounds):
            order = ("base", "this") if number % 2 == 0 else ("this", "base")
            for name in order:
                results, workers = measure(trees[name], env, port, key, db_url, args, scratch)
                runs[name].append(results)
                memory[name] += workers
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        admin(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")

    base_label = args.base_dir or args.base_ref
    print(f"\nbase: {base_label}; this: {ROOT}; gunicorn {args.workers} workers x "
          f"{args.worker_threads} threads, wrk -t{args.threads} -c{args.connections} "
          f"-d{args.duration}s, {args.rounds} rounds, {os.cpu_count()} cores shared by all\n")
    print("| tree | load | requests/s | vs no-op | CPU ms/request: gunicorn / PostgreSQL "
          "| non-2xx |")
    print("|---|---|---|---|---|---|")
    loads = ["no-op", *(label for label, *_ in LOADS)]
    ratios = {name: [{load: results[load]["rps"] / results["no-op"]["rps"] for load in loads}
                     for results in runs[name]] for name in trees}
    for name in trees:
        for load in loads:
            results = [round_results[load] for round_results in runs[name]]
            print(f"| {name} | {load} | {spread([r['rps'] for r in results])} | "
                  f"{spread([rounds[load] for rounds in ratios[name]], '{:.3f}')} | "
                  f"{spread([r['cpu']['gunicorn'] for r in results], '{:.2f}')} / "
                  f"{spread([r['cpu']['postgres'] for r in results], '{:.2f}')} | "
                  f"{sum(r['non2xx'] for r in results)} |")
    print("\nthis / base, vs-no-op ratio divided, round by round (1.00: the same cost):")
    for load in loads[1:]:
        pairs = [this[load] / base[load] for this, base in zip(ratios["this"], ratios["base"],
                                                                 strict=True)]
        print(f"- {load}: {spread(pairs, '{:.3f}')}")
    print("\nspray (a new User-Agent each request) against the cached 1-event request, "
          "requests/s divided (2.00: twice the cost), round by round:")
    for name in trees:
        costs = [rounds["1-event"] / rounds["1-event, new User-Agent each"]
                 for rounds in ratios[name]]
        cpu = [results["1-event, new User-Agent each"]["cpu"]["gunicorn"]
               / results["1-event"]["cpu"]["gunicorn"] for results in runs[name]]
        print(f"- {name}: {spread(costs, '{:.3f}')} (gunicorn CPU per request: "
              f"{spread(cpu, '{:.3f}')})")
    for name in trees:
        print(f"\n{name} workers, MiB (peak RSS / PSS / unique): " + ", ".join(
            f"{worker['peak_rss']:.1f} / {worker['pss']:.0f} / {worker['uss']:.0f}"
            for worker in memory[name]))


if __name__ == "__main__":
    main()
