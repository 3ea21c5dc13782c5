"""Ingest under a slow-loris attack: gunicorn reached directly, and behind nginx.

    python -m bench.ingest.slow_loris [--rounds 3] [--sockets 16] [--requests 10] [--timeout 5]

Creates a database of its own (`egis_slow_loris_bench_<pid>`, dropped at the end), gunicorn as
deployed (deploy/gunicorn.conf.py, 2 workers x 4 threads) and Debian's nginx with
deploy/nginx.conf in front of it (bench.ingest.servers' configuration). Each round, for each way
in (gunicorn's own port, then nginx's): REQUESTS 1-event batches one after another, unattacked;
then SOCKETS connections that each begin a request and send one more header line a second,
never ending it, and once every one has sent two lines, REQUESTS batches again, each given
TIMEOUT seconds to be answered, while the sockets go on trickling. Prints per way in and phase
the requests answered 200 and their latency (median, slowest) over the rounds. Needs nginx.
"""
import argparse
import contextlib
import http.client
import json
import socket
import statistics
import threading
import time

from bench.harness.database import admin, create_bench_site, database_url, run_database
from bench.harness.servers import (
    NGINX_PORT,
    UPSTREAM_PORT,
    bench_env,
    nginx_in_front,
    serving,
    start_gunicorn,
    wait_for,
)

DB_NAME = run_database("slow_loris_bench")
WAYS_IN = {"gunicorn directly": UPSTREAM_PORT, "behind nginx": NGINX_PORT}


def post_batch(port: int, key: str, timeout: float, number: int) -> float | None:
    """One 1-event batch; the seconds until its 200, or None (no answer in time, or another)."""
    now = int(time.time() * 1000)
    body = json.dumps({"id": f"loris-{time.time_ns()}-{number}", "sessionId": "s",
                       "anonymousId": "a", "timestamp": now, "events": [
                           {"type": "pageview", "timestamp": now,
                            "pageUrl": "https://bench.example/"}]})
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    start = time.monotonic()
    try:
        connection.request("POST", "/api/events", body=body,
                           headers={"X-API-Key": key, "Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        return time.monotonic() - start if response.status == 200 else None
    except OSError:
        return None
    finally:
        connection.close()


def trickle(port: int, count: int, stop: threading.Event, lines_sent: list[int]) -> None:
    """Open `count` connections, begin a request on each, then send each one more header line a
    second until `stop` is set; `lines_sent[0]` counts the rounds of lines."""
    connections = [socket.create_connection(("127.0.0.1", port), timeout=5)
                   for _ in range(count)]
    try:
        for connection in connections:
            connection.sendall(b"POST /api/events HTTP/1.1\r\nHost: bench.example\r\n")
        while not stop.is_set():
            for connection in connections:
                with contextlib.suppress(OSError):  # closed by the server: one less holding it
                    connection.sendall(b"X-Trickle-%d: 1\r\n" % lines_sent[0])
            lines_sent[0] += 1
            stop.wait(1)
    finally:
        for connection in connections:
            connection.close()


def attacked(port: int, key: str, args: argparse.Namespace) -> list[float | None]:
    stop, lines_sent = threading.Event(), [0]
    attack = threading.Thread(target=trickle, args=(port, args.sockets, stop, lines_sent))
    attack.start()
    try:
        while lines_sent[0] < 2 and attack.is_alive():
            time.sleep(0.05)
        return [post_batch(port, key, args.timeout, number) for number in range(args.requests)]
    finally:
        stop.set()
        attack.join()


def summary(latencies: list[float | None]) -> str:
    answered = [seconds * 1000 for seconds in latencies if seconds is not None]
    if not answered:
        return f"0 of {len(latencies)}"
    return (f"{len(answered)} of {len(latencies)}; {statistics.median(answered):,.1f} ms median, "
            f"{max(answered):,.1f} ms slowest")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sockets", type=int, default=16)
    parser.add_argument("--requests", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=5)
    args = parser.parse_args()
    env = bench_env(database_url(DB_NAME), UPSTREAM_PORT, 2, 4)
    key = create_bench_site(DB_NAME, env)
    results: dict[tuple[str, str], list[float | None]] = {}
    try:
        with nginx_in_front("egis-slow-loris-"), serving(start_gunicorn(env, UPSTREAM_PORT)):
            wait_for(f"http://127.0.0.1:{NGINX_PORT}/healthz")
            for _ in range(args.rounds):
                for way, port in WAYS_IN.items():
                    results.setdefault((way, "unattacked"), []).extend(
                        post_batch(port, key, args.timeout, number)
                        for number in range(args.requests))
                    results.setdefault((way, f"{args.sockets} slow sockets"), []).extend(
                        attacked(port, key, args))
    finally:
        admin(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
    print(f"\ngunicorn 2 x 4 threads (deploy/gunicorn.conf.py); {args.rounds} rounds of "
          f"{args.requests} 1-event batches, each given {args.timeout:g} s\n")
    print("| way in | phase | answered 200 in time; latency |")
    print("|---|---|---|")
    for (way, phase), latencies in results.items():
        print(f"| {way} | {phase} | {summary(latencies)} |")


if __name__ == "__main__":
    main()
