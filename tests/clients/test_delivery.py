"""Exactly once through failures, against a real egis: an outage (egis stopped and started
again on the same port), an answer lost after egis stored the request (for each kind of call),
interpreter exit without flush(), and a fork."""
import json
import logging
import subprocess
import sys
import time
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from egis_client import Client
from egis_client.sender import backoff
from egis_client.transport import retry_after_seconds

from models import Batch
from tests.fixtures import ROOT
from tests.fixtures.clients import stored
from tests.fixtures.database import create_site
from tests.fixtures.helpers import db

pytestmark = pytest.mark.slow
GPTBOT = "Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)"


def test_an_outage_loses_nothing_and_doubles_nothing(app, restartable, caplog):
    keys = create_site(app, "std.example", "standard")
    client = Client(host=restartable.url, write_key=keys.write_key, server_key=keys.server_key,
                    flush_interval=0.05)
    try:
        client.goal("before")
        assert client.flush(timeout=30)
        restartable.stop()
        with caplog.at_level(logging.WARNING, logger="egis_client"):
            for number in range(3):
                client.track("pageview", page_url=f"https://std.example/{number}",
                             anonymous_id="anon", session_id="sess")
            client.goal("during")
            client.revenue("purchase", amount=Decimal("12.50"), currency="USD")
            client.revenue("renewal", amount="7", currency="EUR", order_id="order-9")
            client.crawl(path="/docs", host="std.example", user_agent=GPTBOT, ip="203.0.113.5")
            deadline = time.monotonic() + 30
            while (not any("not delivered" in r.getMessage() for r in caplog.records)
                   and time.monotonic() < deadline):
                time.sleep(0.05)
            assert not client.flush(timeout=0.5)  # egis is down: not answered yet
        restartable.start()
        assert client.flush(timeout=60)
    finally:
        client.shutdown(timeout=5)
    rows = stored(app)
    assert [e.page_url for e in rows["events"]] == [f"https://std.example/{n}" for n in range(3)]
    assert [g.name for g in rows["goals"]] == ["before", "during"]
    assert [(s.event_name, s.amount_minor, s.order_id) for s in rows["server_events"]] == [
        ("purchase", 1250, None), ("renewal", 700, "order-9")]
    assert [h.path for h in rows["crawl_hits"]] == ["/docs"]
    assert any("Connection refused" in r.getMessage() for r in caplog.records)


CALLS = {
    "track": ("/api/events", lambda c: c.track(
        "pageview", page_url="https://std.example/lost", anonymous_id="a", session_id="s")),
    "goal": ("/api/goals", lambda c: c.goal("lost-goal")),
    "revenue": ("/api/server/events", lambda c: c.revenue(
        "lost-revenue", amount=Decimal("9.99"), currency="USD")),
    "revenue with an order id": ("/api/server/events", lambda c: c.revenue(
        "lost-order", revenue_cents=999, currency="USD", order_id="order-lost")),
    "crawl": ("/api/crawl/report", lambda c: c.crawl(
        path="/lost", host="std.example", user_agent=GPTBOT, ip="203.0.113.6")),
}


def test_an_answer_lost_after_egis_stored_the_request_is_retried_and_stored_once(egis, proxy):
    """Each kind of call in turn: egis stores it and answers, the answer never arrives, the
    client sends it again; egis answers the copy as a duplicate and stores nothing more."""
    client = Client(host=proxy.url, write_key=egis.keys.write_key,
                    server_key=egis.keys.server_key, flush_interval=0.05)
    try:
        for kind, (path, call) in CALLS.items():
            before = proxy.for_path(path)
            proxy.lose[path] = 1
            call(client)
            assert client.flush(timeout=30), kind
            exchanges = proxy.for_path(path)[len(before):]
            status = 204 if kind == "crawl" else 200
            assert [(e.lost, e.status) for e in exchanges] == [(True, status), (False, status)]
    finally:
        client.shutdown(timeout=5)
    rows = stored(egis.app)
    assert [e.page_url for e in rows["events"]] == ["https://std.example/lost"]
    assert [g.name for g in rows["goals"]] == ["lost-goal"]
    assert [s.event_name for s in rows["server_events"]] == ["lost-revenue", "lost-order"]
    assert [h.path for h in rows["crawl_hits"]] == ["/lost"]
    with db(egis.app):
        assert [b.event_count for b in Batch.select()] == [1]


def test_a_bad_gateway_in_front_of_egis_is_retried(egis, proxy, caplog):
    """nginx answers 502 (an HTML page) while egis behind it is down: the client tries again,
    with backoff, until egis answers."""
    client = Client(host=proxy.url, write_key=egis.keys.write_key, flush_interval=0.05)
    proxy.fail["/api/goals"] = 2
    try:
        with caplog.at_level(logging.WARNING, logger="egis_client"):
            client.goal("through-the-gateway")
            assert client.flush(timeout=30)
    finally:
        client.shutdown(timeout=5)
    assert [(e.failed, e.status) for e in proxy.for_path("/api/goals")] == [
        (True, 502), (True, 502), (False, 200)]
    assert [g.name for g in stored(egis.app)["goals"]] == ["through-the-gateway"]
    retries = [r.getMessage() for r in caplog.records if "not delivered" in r.getMessage()]
    assert len(retries) == 2
    assert all("(HTTP 502: HTTP 502 without an explanation)" in line for line in retries)


@pytest.mark.parametrize(("header", "seconds"), [
    ("7", 7.0), (" 0 ", 0.0), ("Wed, 25 Nov 2026 00:00:30 GMT", 30.0),
    ("Tue, 24 Nov 2026 23:59:00 GMT", 0.0), ("soon", None), ("", None), (None, None)])
def test_retry_after_is_read_as_seconds_or_a_date(header, seconds):
    now = datetime(2026, 11, 25, 0, 0, 0, tzinfo=UTC)
    assert retry_after_seconds(header, now) == seconds


def test_backoff_doubles_with_jitter_up_to_its_ceiling():
    for attempt, ceiling in [(0, 0.2), (1, 0.4), (4, 3.2), (7, 25.6), (8, 30.0), (40, 30.0)]:
        delays = [backoff(attempt) for _ in range(200)]
        assert all(ceiling / 2 <= delay <= ceiling for delay in delays), attempt
        assert len(set(delays)) > 1  # jittered


EXIT_WITHOUT_FLUSH = """
import sys
from egis_client import Client

client = Client(host=sys.argv[1], write_key=sys.argv[2], server_key=sys.argv[3],
                flush_interval=3600)  # only the exit sends
client.track("pageview", page_url="https://std.example/exit", anonymous_id="a", session_id="s")
client.goal("exit-goal")
client.revenue("exit-revenue", amount="5.00", currency="USD")
client.crawl(path="/exit", host="std.example", user_agent=sys.argv[4], ip="203.0.113.2")
print("queued; exiting")
"""


def run_script(script: str, *arguments: str) -> subprocess.CompletedProcess:
    run = subprocess.run([sys.executable, "-c", script, *arguments], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return run


def test_calls_queued_at_exit_are_sent(egis):
    run_script(EXIT_WITHOUT_FLUSH, egis.url, egis.keys.write_key, egis.keys.server_key, GPTBOT)
    rows = stored(egis.app)
    assert [e.page_url for e in rows["events"]] == ["https://std.example/exit"]
    assert [g.name for g in rows["goals"]] == ["exit-goal"]
    assert [(s.event_name, s.amount_minor) for s in rows["server_events"]] == [
        ("exit-revenue", 500)]
    assert [h.path for h in rows["crawl_hits"]] == ["/exit"]


FORK = """
import json, os, sys
from egis_client import Client

client = Client(host=sys.argv[1], write_key=sys.argv[2], flush_interval=3600)
client.goal("queued-before-fork")  # the parent's to send, once
client.track("pageview", page_url="https://std.example/parent", anonymous_id="a",
             session_id="parent")
child = os.fork()
if child == 0:  # like a worker of a preloading gunicorn
    client.goal("sent-by-child")
    sys.exit(0)  # no flush(): the exit sends it
_, status = os.waitpid(child, 0)
client.goal("sent-by-parent-after-fork")
print(json.dumps({"child_status": status, "flushed": client.flush(30)}))
"""


MULTIPROCESSING_CHILD = """
import json, multiprocessing, sys
from egis_client import Client

client = Client(host=sys.argv[1], write_key=sys.argv[2], flush_interval=3600)
client.goal("queued-by-parent")

def work():
    client.goal("queued-by-child")  # no flush(): the child ends with os._exit()

child = multiprocessing.get_context("fork").Process(target=work)
child.start()
child.join(60)
print(json.dumps({"child_exitcode": child.exitcode, "flushed": client.flush(30)}))
"""


def test_a_multiprocessing_child_sends_its_calls_at_its_exit(egis):
    run = run_script(MULTIPROCESSING_CHILD, egis.url, egis.keys.write_key)
    assert json.loads(run.stdout.splitlines()[-1]) == {"child_exitcode": 0, "flushed": True}
    assert sorted(g.name for g in stored(egis.app)["goals"]) == [
        "queued-by-child", "queued-by-parent"]


def test_a_forked_child_sends_its_own_calls_and_never_the_parents(egis):
    run = run_script(FORK, egis.url, egis.keys.write_key)
    assert json.loads(run.stdout.splitlines()[-1]) == {"child_status": 0, "flushed": True}
    rows = stored(egis.app)
    assert sorted(g.name for g in rows["goals"]) == [
        "queued-before-fork", "sent-by-child", "sent-by-parent-after-fork"]
    assert [e.session_id for e in rows["events"]] == ["parent"]
