"""What the visit context costs: this checkout against a base tree (main), in one run.

    python -m bench.ingest.visit [--base-ref REF | --base-dir DIR] [--rounds 3] [--duration 8]
                                 [--own-databases] [--loads LOAD ...] [--noop-duration 4]

Extracts the base (`git archive <ref>`; by default the commit this branch forked from main,
`git merge-base HEAD main`: main before this change, whatever main merged since) into a
scratch directory, creates one database of its own (`egis_visit_bench_<pid>`, migrated by this
checkout, whose schema the base can write to; dropped at the end), a pro site and its write key,
or with --own-databases one database per tree, each migrated by its own tree's code (so that what
a change does to the schema, such as another index, is in the comparison too), and serves both
trees at once,
each on its own port with the same gunicorn shape (deploy/gunicorn.conf.py, WORKERS x THREADS,
one trusted proxy hop); only one is loaded at a time. Round after round, for each load, it
measures one tree then the other (the order alternates between rounds), so that the two
figures of a pair are taken seconds apart on a machine whose speed drifts, each right after
that server's no-op (GET /healthz, --noop-duration seconds), its baseline. wrk sends, as
bench.ingest.throughput does, every request as a browser's (Origin, a current browser's User-Agent,
client hints, Accept-Language, a public X-Forwarded-For address, the fingerprint's
screenWidth):

- 1-event batches and 5-event gzip batches (one User-Agent: the parse is cached), the latter
  as five page views on five pages and as the tracker's batches mostly are, one page's page
  view and what followed it (scroll, click, heartbeat);
- 1-event batches with a User-Agent never seen before on every request (a spray).

Prints per tree and load the range (and median) over the rounds of requests/s, of the ratio to
that server's no-op measured just before, and of gunicorn's and PostgreSQL's CPU per request;
then, round by round, this checkout against the base for each load (its vs-no-op ratio
divided by the base's, and its CPU per request divided by the base's), the spray's cost
against the cached request per tree, and each worker's peak RSS.
"""
import argparse
import os
import shutil
import tempfile
import time
from contextlib import ExitStack

from bench.harness import ROOT
from bench.harness.database import admin, create_bench_site, database_url, run_database
from bench.harness.load import load_arguments, post_batches, ranged, spread, wrk
from bench.harness.servers import bench_env, free_ports, serving, start_gunicorn, worker_memory_mib
from bench.harness.trees import base_arguments, base_ref, base_root, git

DB_NAME = run_database("visit_bench")
BASE_DB_NAME = run_database("visit_bench_base")  # the base's own, with --own-databases
NOOP = "no-op"
# (label, events per batch, gzip, a new User-Agent each, one page per batch)
LOADS = (("1-event", 1, False, False, False), ("5-event gzip", 5, True, False, False),
         ("5-event gzip, one page", 5, True, False, True),
         ("1-event, new User-Agent each", 1, False, True, False))
TREES = ("base", "this")


def measure(load: str, port: int, key: str, db_url: str, args: argparse.Namespace,
            scratch: str) -> dict:
    """wrk's result for one load against the server on `port`, with the rate of the no-op
    measured just before it on that server (`noop_rps`): the ratio of the two is taken seconds
    apart, where a no-op measured once a round was a minute away from the round's last load,
    and this machine's speed moves by a third within a minute."""
    noop = wrk("/healthz", args.noop_duration, args.connections, args.threads, port=port)
    _label, per_batch, compressed, spray, one_page = next(entry for entry in LOADS
                                                         if entry[0] == load)
    result = post_batches(port, key, db_url, args, scratch, per_batch, compressed,
                          spray=spray, one_page=one_page)[3]
    return {**result, "noop_rps": noop["rps"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    load_arguments(parser)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--own-databases", action="store_true",
                        help="each tree writes to a database migrated by its own code")
    parser.add_argument("--noop-duration", type=int, default=4,
                        help="seconds of the no-op measured before each load")
    parser.add_argument("--loads", nargs="+", choices=[label for label, *_ in LOADS],
                        help="only these loads (default: all), each against the no-op")
    base_arguments(parser)
    parser.set_defaults(duration=8)
    args = parser.parse_args()

    ports = dict(zip(TREES, free_ports(2), strict=True))
    scratch = tempfile.mkdtemp(prefix="egis-visit-bench-")
    roots = {"base": base_root(args, scratch), "this": ROOT}
    names = {"base": BASE_DB_NAME if args.own_databases else DB_NAME, "this": DB_NAME}
    db_urls = {name: database_url(names[name]) for name in TREES}
    keys = {}
    for name in TREES if args.own_databases else ("this",):
        keys[name] = create_bench_site(names[name], bench_env(
            db_urls[name], ports[name], args.workers, args.worker_threads), root=roots[name])
    keys.setdefault("base", keys["this"])
    loads = list(args.loads or (label for label, *_ in LOADS))
    runs: dict[str, list[dict[str, dict]]] = {name: [] for name in TREES}
    memory: dict[str, list[dict]] = {}
    try:
        with ExitStack() as stack:
            servers = {name: stack.enter_context(serving(start_gunicorn(
                bench_env(db_urls[name], ports[name], args.workers, args.worker_threads),
                ports[name], roots[name]))) for name in TREES}
            time.sleep(2)  # every worker warmed up
            for number in range(args.rounds):
                order = TREES if number % 2 == 0 else TREES[::-1]
                results: dict[str, dict[str, dict]] = {name: {} for name in TREES}
                for load in loads:
                    for name in order:
                        results[name][load] = measure(load, ports[name], keys[name],
                                                      db_urls[name], args, scratch)
                for name in TREES:
                    runs[name].append(results[name])
            memory = {name: worker_memory_mib(server.pid) for name, server in servers.items()}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        for name in set(names.values()):
            admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    report(args, loads, runs, memory)


def report(args: argparse.Namespace, loads: list[str], runs: dict[str, list[dict[str, dict]]],
           memory: dict[str, list[dict]]) -> None:
    print(f"\nbase: {args.base_dir or base_ref(args)}; this: {ROOT} at "
          f"{git('rev-parse', '--short', 'HEAD').decode().strip()}; gunicorn {args.workers} "
          f"workers x {args.worker_threads} threads each, wrk -t{args.threads} "
          f"-c{args.connections} -d{args.duration}s (the no-op before each: "
          f"{args.noop_duration}s), {args.rounds} rounds, {os.cpu_count()} "
          f"cores shared by all; "
          f"{'one database per tree' if args.own_databases else 'one database for both'}\n")
    print("| tree | load | requests/s | vs no-op | gunicorn CPU ms/request | "
          "PostgreSQL CPU ms/request | non-2xx |")
    print("|---|---|---|---|---|---|---|")
    ratios = {name: [{load: results[load]["rps"] / results[load]["noop_rps"] for load in loads}
                     for results in runs[name]] for name in TREES}
    for name in TREES:
        noops = [results[load]["noop_rps"] for results in runs[name] for load in loads]
        print(f"| {name} | {NOOP} (before each load) | {spread(noops)} | | | | |")
        for load in loads:
            results = [round_results[load] for round_results in runs[name]]
            print(f"| {name} | {load} | {spread([r['rps'] for r in results])} | "
                  f"{ranged([rounds[load] for rounds in ratios[name]], '{:.3f}')} | "
                  f"{ranged([r['cpu']['gunicorn'] for r in results], '{:.2f}')} | "
                  f"{ranged([r['cpu']['postgres'] for r in results], '{:.3f}')} | "
                  f"{sum(r['non2xx'] for r in results)} |")
    print("\nthis / base, round by round (1.00: the same cost; throughput ratios above 1 and "
          "CPU ratios below 1 favour this):")
    for load in loads:
        throughput = [this[load] / base[load]
                      for this, base in zip(ratios["this"], ratios["base"], strict=True)]
        cpu = {server: [this[load]["cpu"][server] / base[load]["cpu"][server]
                        for this, base in zip(runs["this"], runs["base"], strict=True)]
               for server in ("gunicorn", "postgres")}
        print(f"- {load}: vs-no-op throughput {ranged(throughput, '{:.3f}')} (rounds: "
              f"{', '.join(f'{value:.2f}' for value in throughput)}); CPU per request, "
              f"gunicorn {ranged(cpu['gunicorn'], '{:.3f}')}, PostgreSQL "
              f"{ranged(cpu['postgres'], '{:.3f}')}")
    if {"1-event", "1-event, new User-Agent each"} <= set(loads):
        spray_report(ratios, runs)
    for name in TREES:
        print(f"\n{name} workers, MiB (peak RSS / PSS / unique): " + ", ".join(
            f"{worker['peak_rss']:.1f} / {worker['pss']:.0f} / {worker['uss']:.0f}"
            for worker in memory[name]))


def spray_report(ratios: dict[str, list[dict[str, float]]],
                 runs: dict[str, list[dict[str, dict]]]) -> None:
    print("\nspray (a new User-Agent each request) against the cached 1-event request "
          "(2.00: twice the cost), round by round:")
    for name in TREES:
        costs = [rounds["1-event"] / rounds["1-event, new User-Agent each"]
                 for rounds in ratios[name]]
        cpu = [results["1-event, new User-Agent each"]["cpu"]["gunicorn"]
               / results["1-event"]["cpu"]["gunicorn"] for results in runs[name]]
        print(f"- {name}: throughput {ranged(costs, '{:.3f}')}; gunicorn CPU per request "
              f"{ranged(cpu, '{:.3f}')}")


if __name__ == "__main__":
    main()
