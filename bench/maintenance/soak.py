"""Soak: mixed traffic against a real gunicorn + PostgreSQL for a long while (not part of CI).

    python -m bench.maintenance.soak [--minutes 10] [--rate 200] [--clients 8] [--sample-seconds 5]

Creates a database of its own (egis_soak_<pid>, dropped at the end), two sites and their keys
through the `flask` CLI, starts gunicorn with deploy/gunicorn.conf.py on a free port, and sends
`--rate` requests a second from `--clients` keep-alive clients: every endpoint, with invalid
bodies, resent batches and repeated orderIds among them. Every `--sample-seconds` it samples
each worker's RSS and open file descriptors and the database's connections. At the end it checks
that what was accepted is what is stored (events, server events, crawler hits, the usage
counter), that no answer was a 5xx, and that memory, descriptors and connections did not grow;
it prints the curve and a verdict.
"""
import argparse
import gzip
import http.client
import itertools
import json
import os
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg2

from bench.harness.database import ADMIN_URL, admin, database_url, run_database
from bench.harness.servers import flask, free_ports, start_gunicorn

DB_NAME = run_database("soak")
DB_URL = database_url(DB_NAME)
[PORT] = free_ports(1)
SEED = 20261123
BOT_UA = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2)"
BROWSER_UA = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
              "Chrome/124.0.0.0 Safari/537.36")
# Growth allowed between the first sample after warm-up and the last one.
RSS_GROWTH_LIMIT_MB = 10
WARM_UP_SECONDS = 60


@dataclass
class Tally:
    """What the clients were told: the service's own account of what it accepted."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    answers: Counter = field(default_factory=Counter)  # (request kind, status)
    events: int = 0  # events in first-time 200s of /api/events, plus goals
    server_events: int = 0  # orderIds answered duplicate: false
    crawler_hits: int = 0  # bot reports answered 204

    def add(self, kind: str, status: int, events: int = 0, server_events: int = 0,
            crawler_hits: int = 0) -> None:
        with self.lock:
            self.answers[(kind, status)] += 1
            self.events += events
            self.server_events += server_events
            self.crawler_hits += crawler_hits


class Client:
    """One keep-alive connection, reopened when the server closes it."""

    def __init__(self) -> None:
        self.connection: http.client.HTTPConnection | None = None

    def request(self, method: str, path: str, body: bytes | None,
                headers: dict[str, str]) -> tuple[int, bytes]:
        for attempt in (1, 2):
            if self.connection is None:
                self.connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
            try:
                self.connection.request(method, path, body=body, headers=headers)
                response = self.connection.getresponse()
                return response.status, response.read()
            except (ConnectionError, http.client.HTTPException):
                self.connection.close()
                self.connection = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


@dataclass(frozen=True)
class Keys:
    write: str
    server: str
    free_write: str


class Traffic:
    """The mix: (weight, request kind). Each kind builds a request and reads its answer."""

    def __init__(self, keys: Keys, tally: Tally, rng: random.Random, client_id: int) -> None:
        self.keys, self.tally, self.rng = keys, tally, rng
        self.ids = (f"{client_id}-{n}" for n in itertools.count())
        self.sent_batches: list[bytes] = []
        self.sent_orders: list[bytes] = []
        self.mix: list[tuple[int, Callable[[Client], None]]] = [
            (40, self.batch), (6, self.resent_batch), (3, self.gzipped_batch),
            (6, self.invalid_batch), (2, self.plan_refused_batch), (10, self.goal),
            (8, self.validate), (7, self.server_event), (3, self.repeated_order),
            (2, self.invalid_server_event), (8, self.crawl_report), (1, self.mcp_call),
            (3, self.bad_key),
        ]

    def pick(self) -> Callable[[Client], None]:
        return self.rng.choices([kind for _, kind in self.mix],
                                weights=[weight for weight, _ in self.mix])[0]

    # --- helpers ---
    def _json(self, key: str, **extra: str) -> dict[str, str]:
        return {"Content-Type": "application/json", "Authorization": f"Bearer {key}", **extra}

    def _events(self, count: int) -> list[dict[str, Any]]:
        now = int(time.time() * 1000)
        types = ["pageview", "click", "scroll", "custom", "performance", "heartbeat"]
        return [{"type": self.rng.choice(types), "timestamp": now - self.rng.randint(0, 5000),
                 "pageUrl": f"https://soak.example/p/{self.rng.randint(1, 50)}",
                 "properties": {"i": i, "amount": 5, "lcp": 1234.5}} for i in range(count)]

    def _new_batch(self) -> bytes:
        return json.dumps({"id": f"b-{next(self.ids)}",
                           "sessionId": f"s-{self.rng.randint(1, 500)}",
                           "anonymousId": f"a-{self.rng.randint(1, 2000)}",
                           "timestamp": int(time.time() * 1000),
                           "events": self._events(self.rng.choice([1, 1, 5, 20, 50]))}).encode()

    def _post_batch(self, client: Client, kind: str, body: bytes,
                    headers: dict[str, str]) -> None:
        status, answer = client.request("POST", "/api/events", body, headers)
        fresh = status == 200 and not json.loads(answer).get("duplicate")
        self.tally.add(kind, status, events=json.loads(answer)["count"] if fresh else 0)

    # --- the kinds ---
    def batch(self, client: Client) -> None:
        body = self._new_batch()
        self.sent_batches = [*self.sent_batches[-20:], body]
        self._post_batch(client, "batch", body, self._json(self.keys.write))

    def resent_batch(self, client: Client) -> None:
        if self.sent_batches:
            body = self.rng.choice(self.sent_batches)
            self._post_batch(client, "resent batch", body, self._json(self.keys.write))

    def gzipped_batch(self, client: Client) -> None:
        body = self._new_batch()
        self._post_batch(client, "gzipped batch", gzip.compress(body),
                         self._json(self.keys.write, **{"Content-Encoding": "gzip"}))

    def invalid_batch(self, client: Client) -> None:
        body = self.rng.choice([b'{"id": "x", "events": []}', b"{not json", b"[]",
                                b'{"id":"x","sessionId":"s","anonymousId":"a","timestamp":1,'
                                b'"events":[{"type":"purchase","timestamp":1,"pageUrl":"u"}]}'])
        status, _ = client.request("POST", "/api/events", body, self._json(self.keys.write))
        self.tally.add("invalid batch", status)

    def plan_refused_batch(self, client: Client) -> None:
        data = json.loads(self._new_batch())
        data["events"][0]["type"] = "error"
        self._post_batch(client, "free plan, error event", json.dumps(data).encode(),
                         self._json(self.keys.free_write))

    def goal(self, client: Client) -> None:
        body = json.dumps({"goal_name": f"goal-{self.rng.randint(1, 5)}",
                           "session_id": f"s-{self.rng.randint(1, 500)}",
                           "metadata": {"plan": "pro", "revenue": 10}}).encode()
        status, _ = client.request("POST", "/api/goals", body, self._json(self.keys.write))
        self.tally.add("goal", status, events=1 if status == 200 else 0)

    def validate(self, client: Client) -> None:
        key = self.rng.choice([self.keys.write, self.keys.server])
        status, _ = client.request("GET", "/api/validate", None, {"X-API-Key": key}
                                   if key == self.keys.write else self._json(key))
        self.tally.add("validate", status)

    def _post_order(self, client: Client, kind: str, body: bytes) -> None:
        status, answer = client.request("POST", "/api/server/events", body,
                                        self._json(self.keys.server))
        fresh = status == 200 and not json.loads(answer)["duplicate"]
        self.tally.add(kind, status, server_events=1 if fresh else 0)

    def server_event(self, client: Client) -> None:
        body = json.dumps({"eventName": "purchase", "orderId": f"o-{next(self.ids)}",
                           "amount": self.rng.choice([19.99, 5, 120.5]), "currency": "EUR",
                           "identifiedUserId": f"u-{self.rng.randint(1, 100)}"}).encode()
        self.sent_orders = [*self.sent_orders[-20:], body]
        self._post_order(client, "server event", body)

    def repeated_order(self, client: Client) -> None:
        if self.sent_orders:
            self._post_order(client, "repeated orderId", self.rng.choice(self.sent_orders))

    def invalid_server_event(self, client: Client) -> None:
        body = self.rng.choice([b'{"eventName": "x", "amount": 1.999, "currency": "USD"}',
                                b'{"eventName": "x", "amount": 1, "currency": "XAU"}',
                                b'{"eventName": "x", "amount": 1, "revenue_cents": 100}'])
        status, _ = client.request("POST", "/api/server/events", body,
                                   self._json(self.keys.server))
        self.tally.add("invalid server event", status)

    def crawl_report(self, client: Client) -> None:
        bot = self.rng.random() < 0.7
        body = json.dumps({"path": f"/p/{self.rng.randint(1, 50)}?q=1",
                           "userAgent": BOT_UA if bot else BROWSER_UA,
                           "ip": f"198.51.100.{self.rng.randint(1, 254)}",
                           "secFetchMode": "navigate", "secFetchDest": "document"}).encode()
        status, _ = client.request("POST", "/api/crawl/report", body,
                                   self._json(self.keys.server))
        self.tally.add("crawl report", status, crawler_hits=1 if bot and status == 204 else 0)

    def mcp_call(self, client: Client) -> None:
        # The tools that read every event of the month would grow with the soak's own data.
        tool = self.rng.choice(["get_errors", "get_crawler_activity", "get_revenue"])
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": tool, "arguments": {}}}).encode()
        status, _ = client.request("POST", "/api/mcp", body, self._json(
            self.keys.server, Accept="application/json, text/event-stream"))
        self.tally.add("mcp tools/call", status)

    def bad_key(self, client: Client) -> None:
        status, _ = client.request("POST", "/api/events", self._new_batch(),
                                   self._json("egis_" + "Q" * 43))
        self.tally.add("unknown key", status)


def run_client(keys: Keys, tally: Tally, client_id: int, rate: float, stop: threading.Event,
               failures: list[str]) -> None:
    traffic = Traffic(keys, tally, random.Random(SEED + client_id), client_id)
    client = Client()
    interval = 1 / rate
    next_at = time.monotonic()
    while not stop.is_set():
        try:
            traffic.pick()(client)
        except Exception as error:  # counted, and the soak goes on
            failures.append(f"{type(error).__name__}: {error}")
        next_at += interval
        time.sleep(max(0.0, next_at - time.monotonic()))


# --- sampling --------------------------------------------------------------------------------

def workers_of(master: int) -> list[int]:
    return [int(pid) for pid in Path(f"/proc/{master}/task/{master}/children").read_text().split()]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def database_connections() -> int:
    connection = psycopg2.connect(ADMIN_URL)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (DB_NAME,))
            return cursor.fetchone()[0]
    finally:
        connection.close()


@dataclass(frozen=True)
class Sample:
    seconds: float
    workers: tuple[int, ...]
    rss: tuple[float, ...]
    fds: tuple[int, ...]
    connections: int
    requests: int


def stored_counts() -> dict[str, int]:
    connection = psycopg2.connect(DB_URL)
    try:
        with connection.cursor() as cursor:
            counts = {}
            for name, sql in (("events", "SELECT count(*) FROM event"),
                              ("server_events", "SELECT count(*) FROM server_event"),
                              ("crawler_hits", "SELECT count(*) FROM crawl_hit"),
                              ("usage", "SELECT coalesce(sum(events), 0) FROM usage")):
                cursor.execute(sql)
                counts[name] = int(cursor.fetchone()[0])
            return counts
    finally:
        connection.close()


def set_up(env: dict[str, str]) -> Keys:
    admin(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
    admin(f"CREATE DATABASE {DB_NAME}")
    flask("db", "upgrade", env=env)
    flask("sites", "create", "soak.example", "--plan", "pro", "--monthly-quota", "2000000000",
          env=env)
    flask("sites", "create", "free.example", "--plan", "free", env=env)

    def key(domain: str, kind: str) -> str:
        return flask("keys", "create", domain, "--kind", kind, env=env).splitlines()[-1]

    return Keys(key("soak.example", "write"), key("soak.example", "server"),
                key("free.example", "write"))


def report(samples: list[Sample], tally: Tally, stored: dict[str, int],
           failures: list[str]) -> bool:
    print("\n| minute | worker RSS (MB) | worker fds | DB connections | requests so far |")
    print("|---:|---|---|---:|---:|")
    shown = [sample for sample in samples if int(sample.seconds) % 30 < 5] or samples
    for sample in shown:
        print(f"| {sample.seconds / 60:.1f} | {' / '.join(f'{r:.1f}' for r in sample.rss)} | "
              f"{' / '.join(map(str, sample.fds))} | {sample.connections} | "
              f"{sample.requests:,} |")
    warm = [s for s in samples if s.seconds >= WARM_UP_SECONDS] or samples
    first, last = warm[0], warm[-1]
    same_workers = first.workers == last.workers
    growth = [b - a for a, b in zip(first.rss, last.rss, strict=False)]
    print(f"\nanswers: {sum(tally.answers.values()):,}")
    for (kind, status), count in sorted(tally.answers.items()):
        print(f"  {kind:24} {status}  {count:,}")
    five_hundreds = sum(count for (_, status), count in tally.answers.items() if status >= 500)
    checks = {
        "accepted events == stored events == usage counter":
            tally.events == stored["events"] == stored["usage"],
        "accepted server events == stored": tally.server_events == stored["server_events"],
        "crawler reports answered 204 == stored hits":
            tally.crawler_hits == stored["crawler_hits"],
        "no 5xx answer": five_hundreds == 0,
        "no client failure (connection error, timeout)": not failures,
        "the same workers from first to last sample": same_workers,
        f"worker RSS growth after warm-up < {RSS_GROWTH_LIMIT_MB} MB":
            same_workers and max(growth) < RSS_GROWTH_LIMIT_MB,
        "worker fds after warm-up do not grow": same_workers and all(
            b <= a + 2 for a, b in zip(first.fds, last.fds, strict=False)),
        "DB connections after warm-up do not grow": last.connections <= first.connections + 2,
    }
    print(f"\naccepted: events {tally.events:,}, server events {tally.server_events:,}, crawler "
          f"hits {tally.crawler_hits:,}; stored: {stored}")
    print(f"RSS growth after warm-up (MB): {[round(g, 1) for g in growth]}; "
          f"client failures: {len(failures)} {failures[:3]}")
    for name, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'}  {name}")
    return all(checks.values())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--rate", type=float, default=200, help="requests a second, in all")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sample-seconds", type=float, default=5)
    parser.add_argument("--csv", type=Path, default=Path("soak-samples.csv"))
    args = parser.parse_args()

    env = {**os.environ, "DATABASE_URL": DB_URL, "FLASK_APP": "wsgi.py",
           "EGIS_RATE_LIMIT_KEY": '"100000000/minute"', "EGIS_RATE_LIMIT_IP": '"100000000/minute"',
           "EGIS_RATE_LIMIT_VALIDATE": '"100000000/minute"',
           "EGIS_RATE_LIMIT_MCP": '"100000000/minute"', "GUNICORN_BIND": f"127.0.0.1:{PORT}",
           "GUNICORN_WORKERS": str(args.workers), "GUNICORN_LOGLEVEL": "warning"}
    keys = set_up(env)
    server = start_gunicorn(env, PORT)
    tally, failures, samples = Tally(), [], []
    stop = threading.Event()
    try:
        clients = [threading.Thread(target=run_client, args=(
            keys, tally, i, args.rate / args.clients, stop, failures)) for i in range(args.clients)]
        started = time.monotonic()
        for thread in clients:
            thread.start()
        while (elapsed := time.monotonic() - started) < args.minutes * 60:
            workers = tuple(sorted(workers_of(server.pid)))
            samples.append(Sample(elapsed, workers, tuple(rss_mb(pid) for pid in workers),
                                  tuple(open_fds(pid) for pid in workers),
                                  database_connections(), sum(tally.answers.values())))
            time.sleep(args.sample_seconds)
        stop.set()
        for thread in clients:
            thread.join(timeout=60)
        stored = stored_counts()
    finally:
        stop.set()
        server.terminate()
        server.wait(timeout=30)
        admin(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
    with args.csv.open("w") as out:
        out.write("seconds,worker,rss_mb,fds,db_connections,requests\n")
        for sample in samples:
            for pid, rss, fds in zip(sample.workers, sample.rss, sample.fds, strict=True):
                out.write(f"{sample.seconds:.1f},{pid},{rss:.1f},{fds},{sample.connections},"
                          f"{sample.requests}\n")
    print(f"\n{args.minutes:g} min, {args.rate:g} requests/s from {args.clients} keep-alive "
          f"clients, {args.workers} gunicorn workers; samples in {args.csv}")
    sys.exit(0 if report(samples, tally, stored, failures) else 1)


if __name__ == "__main__":
    main()
