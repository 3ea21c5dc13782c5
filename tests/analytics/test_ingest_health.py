"""get_ingest_health reports every kind of duplicate that /metrics counts, with the same figures:
resent batches, server events with a known orderId and requests repeating an Idempotency-Key
(egis_duplicates_total{kind="batch"|"order"|"idempotency_key"}). Real requests to the deployed
server (two workers, the tally written on its one-second timer), the tool called through
/api/mcp, on the test database (PostgreSQL or SQLite)."""
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.metrics import samples, value
from tests.fixtures.tracking import batch, goal
from tests.fixtures.wire import Answer, post, send

pytestmark = pytest.mark.slow

# What the test sends, and so the counts both must show.
BATCH_COPIES = 4  # one batch id four times: 3 duplicate batches
ORDER_COPIES = 3  # one orderId three times without a key: 2 duplicate orders...
# ... and once more under a new Idempotency-Key: the key is new, the order is not (3 in all).
DUPLICATE_ORDERS = ORDER_COPIES - 1 + 1
# Requests repeating a key, per endpoint: a goal sent three times, a server event without an
# orderId twice, a crawl report twice (2 + 1 + 1).
KEY_COPIES = {"/api/goals": 3, "/api/server/events": 2, "/api/crawl/report": 2}
KEY_REPEATS = sum(copies - 1 for copies in KEY_COPIES.values())


def ingest_health(url: str, server_key: str) -> dict[str, Any]:
    """get_ingest_health's totals, through /api/mcp."""
    answer = post(url, "/api/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                    "params": {"name": "get_ingest_health", "arguments": {}}},
                  {"Authorization": f"Bearer {server_key}", "Accept": "application/json",
                   "MCP-Protocol-Version": "2025-11-25"})
    assert answer.status == 200, answer.text()
    result = answer.json()["result"]
    assert not result.get("isError"), result
    return result["structuredContent"]["totals"]


def send_copies(url: str, path: str, body: dict[str, Any], key_header: dict[str, str],
                copies: int) -> list[Answer]:
    return [post(url, path, body, key_header) for _ in range(copies)]


def test_duplicates_of_every_kind_are_reported_as_metrics_counts_them(
        start_server, make_site, tmp_path: Path):
    site = make_site("std.example", "standard")
    temp = tmp_path / "tmp"
    temp.mkdir()
    server = start_server(workers=2, deploy_config=True, env={"TMPDIR": str(temp)})
    write = {"Authorization": f"Bearer {site.write_key}"}
    server_key = {"Authorization": f"Bearer {site.server_key}"}

    answers = send_copies(server.url, "/api/events", batch(2), write, BATCH_COPIES)
    assert [answer.json().get("duplicate", False) for answer in answers] == [False] + [True] * (
        BATCH_COPIES - 1)
    order = {"eventName": "purchase", "amount": 19.99, "currency": "USD", "orderId": "o-1"}
    answers = send_copies(server.url, "/api/server/events", order, server_key, ORDER_COPIES)
    answers.append(post(server.url, "/api/server/events", order,
                        {**server_key, "Idempotency-Key": "new-key-old-order"}))
    assert [answer.json()["duplicate"] for answer in answers] == [False, True, True, True]
    bodies = {"/api/goals": (goal(), write),
              "/api/server/events": ({"eventName": "signup"}, server_key),
              "/api/crawl/report": ({"path": "/", "userAgent": "GPTBot/1.2"}, server_key)}
    for path, copies in KEY_COPIES.items():
        body, key = bodies[path]
        answers = send_copies(server.url, path, body, {**key, "Idempotency-Key": f"k{path}"},
                              copies)
        assert {answer.status for answer in answers} <= {200, 204}, answers
        if path != "/api/crawl/report":  # 204: no body to mark
            assert [answer.json().get("duplicate", False) for answer in answers] == [False] + [
                True] * (copies - 1)

    scrape = samples(send(server.url, "GET", "/metrics").text())
    counted = {kind: value(scrape, "egis_duplicates_total", kind=kind)
               for kind in ("batch", "order", "idempotency_key")}
    assert counted == {"batch": BATCH_COPIES - 1, "order": DUPLICATE_ORDERS,
                       "idempotency_key": KEY_REPEATS}
    expected = {"duplicate_batches": counted["batch"], "duplicate_orders": counted["order"],
                "duplicate_idempotency_keys": counted["idempotency_key"]}
    deadline = time.monotonic() + 20  # each worker writes its counts once a second
    while True:
        totals = ingest_health(server.url, site.server_key)
        reported = {name: totals[name] for name in expected}
        if reported == expected or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert reported == expected, server.log()[-3000:]
    assert totals["server_events_stored"] == 2  # the order once, the keyed signup once
