"""What the visit context costs a request in CPU: this checkout against a base tree (main),
in-process, in one run.

    python -m bench.ingest.visit_cpu [--base-ref REF | --base-dir DIR] [--rounds 5]
                                     [--requests 1500]

The base is bench.ingest.visit's: by default the commit this branch forked from main.

bench.ingest.visit measures throughput through gunicorn, which on a machine shared with other work
swings by a factor of two between seconds. This measures the process CPU time (time.process_time:
what egis's Python code costs, PostgreSQL and other processes left out) of requests through
Flask's test client, in a fresh interpreter per tree and round, alternating the two trees'
order between rounds, on one PostgreSQL database migrated by this checkout. Every request is a
browser's as in bench.ingest.visit (Origin, User-Agent, client hints, Accept-Language,
X-Forwarded-For with one trusted hop, fingerprint.screenWidth, page views from google.com with
UTM tags on the first), loads:
- GET /healthz (the no-op),
- 1-event batches, 5-event gzip batches (one User-Agent: the parse is cached),
- 1-event batches with a new User-Agent each request.
Prints per load the CPU µs per request of each tree (range and median over the rounds), and
this / base round by round; then the spray against the cached 1-event request per tree.
"""
import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.harness import ROOT
from bench.harness.database import admin, create_bench_site, database_url, run_database
from bench.harness.load import ranged
from bench.harness.servers import bench_env, free_ports
from bench.harness.trees import base_arguments, base_ref, base_root, git

DB_NAME = run_database("visit_cpu_bench")
LOADS = ("no-op", "1-event", "5-event gzip", "1-event, new User-Agent each")

CHILD = r"""
import gzip, json, sys, time
from app import create_app  # the tree's: `python -c` looks in the working directory first

key, requests, run = sys.argv[1], int(sys.argv[2]), sys.argv[3]
app = create_app()
client = app.test_client()
USER_AGENT = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
              "Chrome/131.0.0.0 Safari/537.36 Edg/131.0.2903.{}")
ADDRESSES = ["193.99.144.80", "8.8.8.8", "81.2.69.160", "2001:4860:4860::8888", "200.160.2.3",
             "1.1.1.1", "133.242.0.1", "196.25.1.1"]


def body(batch_id, events, compressed):
    pages = [{"type": "pageview", "timestamp": 1763700000000,
              "pageUrl": f"https://bench.example/page/{i + 1}" + (
                  "?utm_source=newsletter&utm_medium=email&utm_campaign=spring" if i == 0
                  else ""),
              "pageTitle": f"Page {i + 1}", "referrer": "https://www.google.com/",
              "properties": {"utm_source": "news", "i": i + 1}} for i in range(events)]
    text = json.dumps({"id": batch_id, "sessionId": f"s-{batch_id[-2:]}", "anonymousId": "a",
                       "timestamp": 1763700001000, "compressed": compressed,
                       "fingerprint": {"screenWidth": 1280}, "events": pages}).encode()
    return gzip.compress(text) if compressed else text


def headers(number, spray):
    found = {"X-API-Key": key, "Origin": "https://bench.example", "Content-Type":
             "application/json", "User-Agent": USER_AGENT.format(number if spray else 86),
             "Accept-Language": "de-DE,de;q=0.9,en;q=0.8", "Sec-CH-UA-Mobile": "?0",
             "Sec-CH-UA-Platform": '"Windows"',
             "X-Forwarded-For": ADDRESSES[number % len(ADDRESSES)]}
    return found


def timed(send):
    for number in range(200):  # warm-up: caches, prepared statements, connections
        send(number, warm=True)
    cpu, wall = time.process_time(), time.perf_counter()
    for number in range(requests):
        send(number, warm=False)
    return (time.process_time() - cpu) / requests * 1e6


def post(events, compressed, spray):
    prepared = {}
    for warm in (True, False):
        for number in range(200 if warm else requests):
            batch_id = f"{run}-{events}-{int(compressed)}-{int(spray)}-{int(warm)}-{number}"
            prepared[(warm, number)] = (body(batch_id, events, compressed),
                                        headers(number + (0 if warm else 200), spray))

    def send(number, warm):
        data, sent = prepared[(warm, number)]
        extra = {"Content-Encoding": "gzip"} if compressed else {}
        response = client.post("/api/events", data=data, headers={**sent, **extra},
                               environ_base={"REMOTE_ADDR": "127.0.0.1"})
        assert response.status_code == 200 and response.get_json()["count"] == events, (
            response.get_data())
    return timed(send)


def noop(number, warm):
    assert client.get("/healthz").status_code == 200

print(json.dumps({"no-op": timed(noop), "1-event": post(1, False, False),
                  "5-event gzip": post(5, True, False),
                  "1-event, new User-Agent each": post(1, False, True)}))
"""


def run_tree(root: Path, env: dict[str, str], key: str, requests: int, run: str) -> dict:
    child = subprocess.run([sys.executable, "-c", CHILD, key, str(requests), run], cwd=root,
                           env=env, capture_output=True, text=True)
    if child.returncode != 0:
        raise RuntimeError(f"{root}: {child.stderr[-3000:]}")
    return json.loads(child.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=1500)
    base_arguments(parser)
    args = parser.parse_args()

    db_url = database_url(DB_NAME)
    env = {**bench_env(db_url, free_ports(1)[0], 1, 1), "GUNICORN_LOGLEVEL": "warning"}
    key = create_bench_site(DB_NAME, env)
    scratch = tempfile.mkdtemp(prefix="egis-visit-cpu-")
    roots = {"base": base_root(args, scratch), "this": ROOT}
    runs: dict[str, list[dict]] = {"base": [], "this": []}
    try:
        for number in range(args.rounds):
            order = ("base", "this") if number % 2 == 0 else ("this", "base")
            for name in order:
                runs[name].append(run_tree(roots[name], env, key, args.requests,
                                           f"{name}{number}"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        admin(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")

    print(f"\nbase: {args.base_dir or base_ref(args)}; this: {ROOT} at "
          f"{git('rev-parse', '--short', 'HEAD').decode().strip()}; {args.rounds} rounds of "
          f"{args.requests} requests per load, Flask's test client, process CPU time\n")
    print("| load | base, CPU µs/request | this, CPU µs/request | this / base |")
    print("|---|---|---|---|")
    for load in LOADS:
        base = [result[load] for result in runs["base"]]
        this = [result[load] for result in runs["this"]]
        ratios = [mine / theirs for mine, theirs in zip(this, base, strict=True)]
        print(f"| {load} | {ranged(base, '{:.0f}')} | {ranged(this, '{:.0f}')} | "
              f"{ranged(ratios, '{:.3f}')} |")
    print("\nspray (a new User-Agent each request) / cached 1-event request, CPU, round by "
          "round:")
    for name, results in runs.items():
        costs = [result["1-event, new User-Agent each"] / result["1-event"]
                 for result in results]
        print(f"- {name}: {ranged(costs, '{:.3f}')}")


if __name__ == "__main__":
    main()
