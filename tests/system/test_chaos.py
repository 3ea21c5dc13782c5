"""Chaos under load: retrying clients keep sending while PostgreSQL is crash-stopped and started
again, a server worker is SIGKILLed, and PostgreSQL freezes for a few seconds.

The deployment is the project's (`launch_server(deploy_config=True)`) on a throwaway cluster
of our own (tests/fixtures/cluster.py). Clients behave as the tracker and a careful backend
do: a batch (or an orderId) is resent under the same id after a 503, a 5xx or a broken
connection, until it gets a 200. Afterwards: every batch and every orderId is stored, each
exactly once with all its events; no answer was a 500; every 503 carried Retry-After; no request
waited longer than REQUEST_BOUND_SECONDS.
"""
import http.client
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg2
import pytest

from app.storage.db import release_connections
from tests.fixtures.cluster import Cluster, children, migrated_site
from tests.fixtures.database import BACKEND, SiteKeys
from tests.fixtures.servers import LiveServer, launch_server, stop_server
from tests.fixtures.tracking import batch, unique
from tests.fixtures.wire import post, send

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    BACKEND == "sqlite", reason="chaos is done to a PostgreSQL server; SQLite has none")]

# No answer may take longer: statement_timeout is 15 s (app/storage/db.py); gunicorn's worker
# timeout is 30 s, granian has none.
REQUEST_BOUND_SECONDS = 20
RECOVERY_BOUND_SECONDS = 30
EVENT_CLIENTS, ORDER_CLIENTS = 6, 3
OUTAGE_SECONDS = 2
FREEZE_SECONDS = 3


@dataclass
class Delivery:
    """One batch or order, sent until a 200."""

    key: str  # the batch id or the orderId
    size: int  # events in the batch (1 for an order)
    statuses: list[int] = field(default_factory=list)
    retry_afters: list[str | None] = field(default_factory=list)  # per 503
    broken: int = 0  # connections that failed (a killed worker, a reset)
    slowest: float = 0.0  # seconds, the longest wait for an answer
    answer: dict[str, Any] | None = None  # the 200's body


@dataclass
class Stack:
    cluster: Cluster
    server: LiveServer
    site: SiteKeys

    def workers(self) -> list[int]:
        return children(self.server.process.pid)


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    cluster = Cluster()
    server = None
    try:
        cluster.start()
        site = migrated_site(cluster.url)
        env = {f"EGIS_RATE_LIMIT_{name}": "1000000/minute" for name in ("KEY", "IP")}
        server = launch_server(cluster.url, tmp_path, workers=2, env=env, deploy_config=True)
        yield Stack(cluster, server, site)
    finally:
        if server is not None:
            stop_server(server)
        release_connections()
        cluster.destroy()


def deliver(url: str, path: str, body: dict[str, Any], headers: dict[str, str],
            delivery: Delivery, give_up_at: float) -> Delivery:
    while time.monotonic() < give_up_at:
        started = time.monotonic()
        try:
            answer = post(url, path, body, headers, timeout=REQUEST_BOUND_SECONDS)
        except TimeoutError:
            raise AssertionError(f"{path} {delivery.key}: no answer within "
                                 f"{REQUEST_BOUND_SECONDS} s") from None
        except (ConnectionError, http.client.HTTPException):
            delivery.broken += 1
            time.sleep(0.1)
            continue
        delivery.slowest = max(delivery.slowest, time.monotonic() - started)
        delivery.statuses.append(answer.status)
        if answer.status == 200:
            delivery.answer = answer.json()
            return delivery
        if answer.status == 503:
            delivery.retry_afters.append(answer.headers.get("retry-after"))
        # A real client waits Retry-After (5 s); a shorter pause keeps the test short.
        time.sleep(0.2)
    return delivery


def client(stack: Stack, make: Callable[[], tuple[str, dict[str, Any], int]], path: str,
           headers: dict[str, str], stop: threading.Event) -> list[Delivery]:
    deliveries = []
    while not stop.is_set():
        key, body, size = make()
        deliveries.append(deliver(stack.server.url, path, body, headers, Delivery(key, size),
                                  time.monotonic() + 60))
        time.sleep(0.02)
    return deliveries


def new_batch() -> tuple[str, dict[str, Any], int]:
    body = batch(3)
    return body["id"], body, 3


def new_order() -> tuple[str, dict[str, Any], int]:
    order_id = unique("order")
    return order_id, {"eventName": "purchase", "amount": 12.34, "currency": "EUR",
                      "orderId": order_id}, 1


def wait_until_ready(stack: Stack) -> None:
    deadline = time.monotonic() + RECOVERY_BOUND_SECONDS
    while time.monotonic() < deadline:
        try:
            answer = send(stack.server.url, "GET", "/readyz", timeout=5)
            if answer.status == 200:
                return
        except (ConnectionError, http.client.HTTPException, TimeoutError):
            pass
        time.sleep(0.1)
    raise AssertionError(f"not ready again within {RECOVERY_BOUND_SECONDS} s")


def wait_for_workers(stack: Stack, count: int, other_than: int) -> None:
    deadline = time.monotonic() + RECOVERY_BOUND_SECONDS
    while time.monotonic() < deadline:
        workers = stack.workers()
        if len(workers) == count and other_than not in workers:
            return
        time.sleep(0.1)
    raise AssertionError("the server did not replace the killed worker")


def chaos(stack: Stack) -> None:
    time.sleep(1)  # load first
    stack.cluster.crash()
    time.sleep(OUTAGE_SECONDS)
    stack.cluster.start()
    wait_until_ready(stack)
    victim = stack.workers()[0]
    os.kill(victim, signal.SIGKILL)
    wait_for_workers(stack, 2, other_than=victim)
    wait_until_ready(stack)
    stack.cluster.freeze()
    time.sleep(FREEZE_SECONDS)
    stack.cluster.thaw()
    wait_until_ready(stack)
    time.sleep(1)  # and load after


def stored(stack: Stack, sql: str) -> dict[str, int]:
    connection = psycopg2.connect(stack.cluster.url)
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql)
            return dict(cursor.fetchall())
    finally:
        connection.close()


def test_nothing_lost_nothing_doubled_through_crash_kill_and_freeze(stack):
    stop = threading.Event()
    with ThreadPoolExecutor(EVENT_CLIENTS + ORDER_CLIENTS) as pool:
        batches = [pool.submit(client, stack, new_batch, "/api/events",
                               stack.site.write_headers(), stop) for _ in range(EVENT_CLIENTS)]
        orders = [pool.submit(client, stack, new_order, "/api/server/events",
                              stack.site.server_headers(), stop) for _ in range(ORDER_CLIENTS)]
        try:
            chaos(stack)
        finally:
            stop.set()
        batch_deliveries = [d for future in batches for d in future.result()]
        order_deliveries = [d for future in orders for d in future.result()]
    deliveries = batch_deliveries + order_deliveries

    statuses = [status for d in deliveries for status in d.statuses]
    assert set(statuses) <= {200, 503}, sorted(set(statuses))
    assert statuses.count(503) > 0  # the outage was felt
    assert max(d.slowest for d in deliveries) >= FREEZE_SECONDS / 2  # and so was the freeze
    retry_afters = [value for d in deliveries for value in d.retry_afters]
    assert all(value is not None and int(value) >= 1 for value in retry_afters), retry_afters
    undelivered = [d.key for d in deliveries if d.answer is None]
    assert not undelivered, undelivered

    events_per_batch = stored(stack, "SELECT b.batch_key, count(e.id) FROM batch b "
                                     "LEFT JOIN event e ON e.batch_id = b.id GROUP BY b.batch_key")
    batch_rows = stored(stack, "SELECT batch_key, count(*) FROM batch GROUP BY batch_key")
    assert batch_rows == {d.key: 1 for d in batch_deliveries}
    assert events_per_batch == {d.key: d.size for d in batch_deliveries}
    assert {d.answer["count"] for d in batch_deliveries} == {3}  # a duplicate says the first
    usage = stored(stack, "SELECT 'events', sum(events) FROM usage")["events"]
    assert usage == sum(d.size for d in batch_deliveries)

    order_rows = stored(stack, "SELECT order_id, count(*) FROM server_event GROUP BY order_id")
    assert order_rows == {d.key: 1 for d in order_deliveries}
    amounts = stored(stack, "SELECT 'amounts', count(*) FROM server_event "
                            "WHERE amount_minor = 1234 AND currency = 'EUR'")
    assert amounts["amounts"] == len(order_deliveries)
