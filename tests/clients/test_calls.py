"""Every call of egis_client.Client against a real egis (gunicorn, the test database): what is
stored is what was called, exactly once; money exact; misuse raises at the call; what egis
refuses is logged with its sentence and dropped without holding back what follows; 429 waits
for Retry-After; the queue is bounded; eight threads share one client."""
import logging
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from egis_client import Client

from models import Batch
from tests.fixtures.clients import stored
from tests.fixtures.helpers import db
from tests.fixtures.servers import free_port

pytestmark = pytest.mark.slow
# An event's own time, to the second: egis takes events up to 400 days after they happened.
YESTERDAY = (datetime.now(UTC) - timedelta(days=1)).replace(microsecond=0)
CHROME = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/131.0.0.0 Safari/537.36")


def test_every_call_is_stored_once(egis, make_client):
    client = make_client()
    client.track("pageview", page_url="https://std.example/a?x=1", anonymous_id="anon-1",
                 session_id="sess-1", page_title="A", referrer="https://news.example/")
    client.track("custom", page_url="https://std.example/a", name="play",
                 properties={"video": "intro"}, anonymous_id="anon-1", session_id="sess-1",
                 timestamp=YESTERDAY)
    client.goal("signup", metadata={"plan": "pro"}, anonymous_id="anon-1", session_id="sess-1",
                page_url="https://std.example/signup")
    client.revenue("purchase", amount=Decimal("19.99"), currency="USD", order_id="order-1",
                   user_id="user-7", anonymous_id="anon-1", session_id="sess-1",
                   properties={"sku": "A1", "amount": 5})
    client.revenue("refund", revenue_cents=-500, currency="EUR")
    client.revenue("yen", amount="1500", currency="JPY")
    client.revenue("dinar", amount=3, currency="BHD")
    client.revenue("signup-bonus")
    client.crawl(path="/pricing?utm_source=x", host="std.example",
                 user_agent="Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)",
                 ip="203.0.113.7")
    client.crawl(path="/", host="std.example", user_agent=CHROME, ip="203.0.113.8",
                 sec_fetch_dest="document", sec_fetch_mode="navigate")  # ignored by egis
    assert client.flush(timeout=30)

    rows = stored(egis.app)
    assert [(e.type, e.name, e.page_url, e.session_id, e.anonymous_id) for e in rows["events"]] \
        == [("pageview", None, "https://std.example/a?x=1", "sess-1", "anon-1"),
            ("custom", "play", "https://std.example/a", "sess-1", "anon-1")]
    assert rows["events"][0].page_title == "A"
    assert rows["events"][1].properties == {"video": "intro"}
    assert rows["events"][1].client_ts == int(YESTERDAY.timestamp() * 1000)
    with db(egis.app):
        assert Batch.select().count() == 1  # one session's events: one batch
    (goal,) = rows["goals"]
    assert (goal.name, goal.properties, goal.page_url) == (
        "signup", {"plan": "pro"}, "https://std.example/signup")
    assert [(s.event_name, s.amount_minor, s.currency, s.order_id, s.identified_user_id)
            for s in rows["server_events"]] == [
        ("purchase", 1999, "USD", "order-1", "user-7"), ("refund", -500, "EUR", None, None),
        ("yen", 1500, "JPY", None, None), ("dinar", 3000, "BHD", None, None),
        ("signup-bonus", None, None, None, None)]
    assert rows["server_events"][0].properties == {"sku": "A1"}  # money stripped by egis
    (hit,) = rows["crawl_hits"]
    assert (hit.path, hit.crawler, hit.category) == ("/pricing", "GPTBot", "ai_training")


def test_validate_answers_now(egis, make_client):
    answer = make_client().validate()
    assert answer["valid"] is True and answer["canTrack"] is True
    assert answer["plan"] == "standard"
    server_only = make_client(write_key=None).validate()
    assert (server_only["valid"], server_only["canTrack"]) == (True, False)
    wrong = make_client(write_key="egis_" + "A" * 43).validate()
    assert wrong["valid"] is False and wrong["error"]


@pytest.fixture
def offline_client() -> Iterator[Client]:
    """A client of an address where nothing listens: whatever it queued, flush() says False."""
    client = Client(host=f"http://127.0.0.1:{free_port()}", write_key="egis_x",
                    server_key="egiss_x", flush_interval=0.05)
    yield client
    client.shutdown(timeout=0)


@pytest.mark.parametrize("amount", [19.99, 1.0, float("nan"), True])
def test_a_float_amount_raises_at_the_call(offline_client, amount):
    with pytest.raises(TypeError, match="amount must be a Decimal, str or int"):
        offline_client.revenue("purchase", amount=amount, currency="USD")
    with pytest.raises(TypeError, match="revenue_cents must be an int"):
        offline_client.revenue("purchase", revenue_cents=amount, currency="USD")
    assert offline_client.flush(timeout=0)  # nothing was queued


@pytest.mark.parametrize(("call", "error"), [
    (lambda c: c.revenue("x", amount="ten", currency="USD"), ValueError),
    (lambda c: c.revenue("x", amount=Decimal("Infinity"), currency="USD"), ValueError),
    (lambda c: c.revenue("x", amount=1, revenue_cents=100, currency="USD"), ValueError),
    (lambda c: c.revenue("x", amount=1), ValueError),
    (lambda c: c.revenue("x", currency="USD"), ValueError),
    (lambda c: c.revenue("x", amount=1, currency="dollars"), ValueError),
    (lambda c: c.revenue("", amount=1, currency="USD"), ValueError),
    (lambda c: c.track("visit", page_url="https://std.example/", anonymous_id="a",
                       session_id="s"), ValueError),
    (lambda c: c.track("pageview", page_url="", anonymous_id="a", session_id="s"), ValueError),
    (lambda c: c.track("pageview", page_url="https://std.example/", anonymous_id="a" * 129,
                       session_id="s"), ValueError),
    (lambda c: c.track("pageview", page_url="https://std.example/", anonymous_id="a",
                       session_id="s", properties={"tags": {1, 2}}), TypeError),
    (lambda c: c.track("pageview", page_url="https://std.example/", anonymous_id="a",
                       session_id="s", timestamp=datetime(2026, 1, 1)), ValueError),
    (lambda c: c.goal("g" * 65), ValueError),
    (lambda c: c.goal("signup", metadata=["not", "a", "dict"]), TypeError),
    (lambda c: c.crawl(path="", host="std.example", user_agent="GPTBot", ip=None), ValueError),
], ids=["amount text", "infinite amount", "both amounts", "amount without currency",
        "currency alone", "currency not a code", "empty event name", "unknown type",
        "empty page url", "long anonymous id", "properties not JSON", "naive timestamp",
        "long goal name", "metadata not a dict", "empty path"])
def test_misuse_raises_at_the_call_and_queues_nothing(offline_client, call, error):
    with pytest.raises(error):
        call(offline_client)
    assert offline_client.flush(timeout=0)  # nothing was queued
    offline_client.goal("queued")
    assert not offline_client.flush(timeout=0)  # what flush() says once something is queued


def test_a_call_without_its_key_raises():
    host = f"http://127.0.0.1:{free_port()}"
    writer, server = Client(host, write_key="egis_x"), Client(host, server_key="egiss_x")
    for call in (lambda: writer.revenue("x"), lambda: writer.crawl(
            path="/", host=None, user_agent="GPTBot", ip=None)):
        with pytest.raises(ValueError, match="server key"):
            call()
    for call in (lambda: server.goal("x"), lambda: server.track(
            "pageview", page_url="https://std.example/", anonymous_id="a", session_id="s")):
        with pytest.raises(ValueError, match="write key"):
            call()
    with pytest.raises(ValueError, match="write_key, a server_key"):
        Client(host=host)
    assert writer.flush(timeout=0) and server.flush(timeout=0)


def test_a_refusal_is_logged_with_egis_sentence_and_what_follows_is_sent(egis, make_client,
                                                                        caplog):
    client = make_client()
    with caplog.at_level(logging.ERROR, logger="egis_client"):
        client.revenue("too-precise", amount="1.999", currency="USD")  # USD has 2 decimals
        client.goal("after-the-refusal")
        assert client.flush(timeout=30)
    (refusal,) = [r for r in caplog.records if r.name == "egis_client"]
    message = refusal.getMessage()
    assert message.startswith("egis refused server event 'too-precise' (HTTP 400): amount: ")
    assert "USD" in message and message.endswith(" Dropped.")
    rows = stored(egis.app)
    assert rows["server_events"] == [] and [g.name for g in rows["goals"]] == [
        "after-the-refusal"]


def test_a_plan_gated_type_is_dropped_and_the_rest_of_the_batch_sent(egis, make_client,
                                                                     caplog):
    from tests.fixtures.database import create_site

    free = create_site(egis.app, "free.example", "free")
    client = make_client(write_key=free.write_key, server_key=None)
    for type_ in ("pageview", "error", "click"):
        client.track(type_, page_url="https://free.example/", anonymous_id="a", session_id="s")
    with caplog.at_level(logging.ERROR, logger="egis_client"):
        assert client.flush(timeout=30)
    assert [e.type for e in stored(egis.app)["events"]] == ["pageview", "click"]
    assert any("HTTP 403" in r.getMessage() and "error event(s); 2 sent again" in r.getMessage()
               for r in caplog.records)


def test_a_429_is_retried_after_retry_after(app, start_server, caplog):
    """One key may send one request a second: the second and third goals get a 429 with
    Retry-After, and come back no sooner than it says."""
    from tests.fixtures.clients import LosingProxy
    from tests.fixtures.database import create_site

    keys = create_site(app, "std.example", "standard")
    server = start_server(workers=1, env={"EGIS_RATE_LIMIT_KEY": "1/second"})
    watch = LosingProxy(int(server.url.rsplit(":", 1)[1]))
    client = Client(host=watch.url, write_key=keys.write_key, flush_interval=0.05)
    try:
        for name in ("first", "second", "third"):
            client.goal(name)
        with caplog.at_level(logging.WARNING, logger="egis_client"):
            assert client.flush(timeout=60)
    finally:
        client.shutdown(timeout=5)
        watch.close()
    exchanges = watch.for_path("/api/goals")
    limited = [i for i, e in enumerate(exchanges) if e.status == 429]
    assert limited and all(exchanges[i].retry_after >= 1 for i in limited)
    for i in limited:
        assert exchanges[i + 1].at - exchanges[i].at >= exchanges[i].retry_after
    assert sum(e.status == 200 for e in exchanges) == 3
    assert sorted(g.name for g in stored(app)["goals"]) == ["first", "second", "third"]
    assert any("HTTP 429" in r.getMessage() for r in caplog.records)


def test_the_queue_is_bounded_dropping_the_oldest(egis, make_client, caplog):
    client = make_client(max_queue=3, flush_interval=3600)  # nothing sent before flush()
    with caplog.at_level(logging.WARNING, logger="egis_client"):
        for number in range(5):
            client.goal(f"goal-{number}")
    drops = [r.getMessage() for r in caplog.records if "queue full" in r.getMessage()]
    assert drops == [
        "egis client queue full (max_queue=3): dropped the oldest call, goal 'goal-0'; "
        "1 dropped so far",
        "egis client queue full (max_queue=3): dropped the oldest call, goal 'goal-1'; "
        "2 dropped so far"]
    assert client.flush(timeout=30)
    assert [g.name for g in stored(egis.app)["goals"]] == ["goal-2", "goal-3", "goal-4"]


def test_eight_threads_share_one_client(egis, make_client):
    client = make_client()
    start = threading.Barrier(8)

    def work(thread: int) -> None:
        start.wait()
        for number in range(60):
            client.track("custom", name=f"n{number}", page_url="https://std.example/",
                         anonymous_id=f"anon-{thread}", session_id=f"sess-{thread}")
        client.goal(f"goal-{thread}", session_id=f"sess-{thread}")
        client.revenue("purchase", revenue_cents=100 + thread, currency="USD",
                       order_id=f"order-{thread}")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert client.flush(timeout=60)
    rows = stored(egis.app)
    per_session: dict[str, list[str]] = {}
    for event in rows["events"]:
        per_session.setdefault(event.session_id, []).append(event.name)
    assert per_session == {f"sess-{n}": [f"n{i}" for i in range(60)] for n in range(8)}
    assert sorted(g.name for g in rows["goals"]) == [f"goal-{n}" for n in range(8)]
    assert sorted(s.amount_minor for s in rows["server_events"]) == list(range(100, 108))
    with db(egis.app):  # 60 events a session: at most 50 a batch, so at least 2 batches each
        assert Batch.select().count() >= 16
        assert max(b.event_count for b in Batch.select()) <= 50
