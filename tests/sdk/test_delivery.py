"""Delivery that loses nothing and counts nothing twice, identity, and the privacy switches.

The proxy in front of egis fails on purpose (before egis sees a batch, after egis stored it, or
by dropping the connection); the assertions are on what egis stored and what the proxy saw.
"""
import json
import time

import pytest

from tests.fixtures.browser import tracker_ready
from tests.fixtures.database import BACKEND
from tests.fixtures.helpers import post_json, wait_for
from tests.fixtures.proxy import DROP, FAIL_AFTER, FAIL_BEFORE, STALL
from tests.fixtures.tracking import stored_events

LEAVE = "/left"  # a page without the tracker, on the same origin


# The tracker does the same whatever database egis stores in: once, on PostgreSQL, is enough.
pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    BACKEND == "sqlite", reason="browser tests run on PostgreSQL")]


@pytest.fixture
def std(make_site):
    return make_site("localhost", "standard")


def _key(event: dict) -> tuple:
    return (event["type"], event.get("name"), event["timestamp"],
            json.dumps(event.get("properties") or {}, sort_keys=True))


def _stored_key(event) -> tuple:
    return (event.type, event.name, event.client_ts,
            json.dumps(event.properties or {}, sort_keys=True))


def assert_sent_events_stored_once(app, site, egis) -> None:
    """Every event that reached egis is stored, once (polled: a batch may be on its way)."""

    def compared() -> tuple[list[tuple], list[tuple]]:
        sent = {_key(event) for batch in egis.batches() for event in batch["events"]}
        return sorted(sent), sorted(_stored_key(e) for e in stored_events(app, site.site.id))

    wait_for(lambda: (pair := compared())[0] == pair[1], what="every event stored once",
             seen=compared)


def _names(app, site) -> list[str]:
    return sorted(e.name for e in stored_events(app, site.site.id) if e.type == "custom")


def _track(page, *names: str) -> None:
    page.evaluate("names => names.forEach(name => egis.track(name))", list(names))


# In the page: no batch waits in localStorage (each one sent has been answered).
NOTHING_STORED = ("() => Object.keys(localStorage).every(name => !name.startsWith('egis_batches_')"
                  " || JSON.parse(localStorage[name]).length == 0)")
GATED = {"error", "performance"}  # event types the free plan refuses


def _types(item) -> set[str]:
    return {e["type"] for e in item.batch["events"]}


def _attempts(egis) -> dict[str, list[str]]:
    """Per batch id, what its POSTs met, in order."""
    attempts: dict[str, list[str]] = {}
    for item in list(egis.received):
        attempts.setdefault(item.batch["id"], []).append(item.action)
    return attempts


def test_retries_keep_the_batch_id_and_store_each_event_once(app, std, tracked, page, egis):
    egis.fail_next(FAIL_BEFORE, FAIL_AFTER, DROP, FAIL_AFTER)
    page.goto(tracked("/flaky", std.write_key))
    tracker_ready(page)
    _track(page, "one", "two", "three")
    wait_for(lambda: _names(app, std) == ["one", "three", "two"] and len(egis.received) >= 5
             and all(actions[-1] == "pass" for actions in _attempts(egis).values()),
             timeout=40, what="every batch answered 200 after four failures")
    assert_sent_events_stored_once(app, std, egis)
    attempts = _attempts(egis)
    assert attempts[egis.received[0].batch["id"]][0] == FAIL_BEFORE
    assert sum(len(actions) for actions in attempts.values()) == len(attempts) + 4, \
        "each failure retried under the same batch id, never a new one"


def test_an_offline_period_loses_nothing(app, std, tracked, page, context, egis):
    page.goto(tracked("/offline", std.write_key))
    tracker_ready(page)
    wait_for(lambda: egis.batches(), what="the page view")
    context.set_offline(True)
    _track(page, "while-offline-1", "while-offline-2")
    page.evaluate("egis.flush()")
    context.set_offline(False)
    wait_for(lambda: _names(app, std) == ["while-offline-1", "while-offline-2"], timeout=40)
    assert_sent_events_stored_once(app, std, egis)


def test_pending_batches_survive_a_reload(app, std, tracked, page, egis):
    url = tracked("/reload", std.write_key)
    egis.fail_next(*[FAIL_BEFORE] * 1000)
    page.goto(url)
    tracker_ready(page)
    _track(page, "before-reload")
    wait_for(lambda: any(e.get("name") == "before-reload"
                         for b in egis.batches() for e in b["events"]), what="an attempt")
    pending_id = next(b["id"] for b in egis.batches()
                      if any(e.get("name") == "before-reload" for e in b["events"]))
    assert _names(app, std) == []
    page.reload()
    egis.actions.clear()
    wait_for(lambda: _names(app, std) == ["before-reload"], timeout=40)
    delivered = [item for item in egis.received if item.action == "pass"
                 and any(e.get("name") == "before-reload" for e in item.batch["events"])]
    # The same batch, under its first id (a page may send a batch twice; egis stores it once).
    assert {item.batch["id"] for item in delivered} == {pending_id}
    assert_sent_events_stored_once(app, std, egis)


def test_a_batch_in_flight_when_the_page_is_left_is_not_lost(app, std, tracked, pages, page,
                                                              egis):
    """Left while a request is unanswered (an outage: its keepalive copy fails too, after the
    page is gone), the batch stays stored and the next page of the site delivers it."""
    pages.pages[LEAVE] = "<p>no tracker here</p>"
    # Page views only: no other batch (web vitals, scroll depth) to take the actions below.
    url = tracked("/stalled", std.write_key, flush_interval=600_000,
                  **dict.fromkeys(("vitals", "scroll", "heartbeat", "clicks"), "false"))
    page.goto(url)
    tracker_ready(page)
    wait_for(lambda: page.evaluate(NOTHING_STORED), what="the page view answered")
    egis.fail_next(STALL, FAIL_BEFORE)
    _track(page, "mid-flight")
    page.evaluate("() => { egis.flush() }")  # not awaited: it resolves when answered
    (stalled,) = wait_for(lambda: [item for item in list(egis.received) if item.action == STALL],
                          what="the stalled request")
    stalled_id = stalled.batch["id"]
    page.goto(pages.url(LEAVE))
    wait_for(lambda: _attempts(egis)[stalled_id] == [STALL, FAIL_BEFORE],
             what="the keepalive copy, refused", seen=lambda: _attempts(egis))
    egis.release()
    assert _names(app, std) == []
    page.goto(url)
    wait_for(lambda: _names(app, std) == ["mid-flight"], what="the next page's delivery")
    assert _attempts(egis)[stalled_id][-1] == "pass"
    assert_sent_events_stored_once(app, std, egis)


def test_a_page_left_during_a_backoff_sends_the_waiting_batch(app, std, tracked, pages, page,
                                                               egis):
    """Refused (a 503 that asks for 30 s), then allowed, and the page is left during the wait:
    the page hide sends the batch waiting to retry (with keepalive: uncompressed), long before
    the retry was due. No answer reaches a page that is gone, so the batch stays stored: the
    next page sends it again under its id, and egis stores each event once."""
    pages.pages[LEAVE] = "<p>no tracker here</p>"
    url = tracked("/backoff", std.write_key, flush_interval=600_000,
                  **dict.fromkeys(("vitals", "scroll", "heartbeat", "clicks"), "false"))
    page.goto(url)
    tracker_ready(page)
    wait_for(lambda: page.evaluate(NOTHING_STORED), what="the page view answered")
    egis.retry_after = "30"
    egis.fail_next(FAIL_BEFORE)
    _track(page, "outage-1", "outage-2")
    page.evaluate("egis.flush()")  # resolves once the 503 is answered: the tracker now waits
    (refused,) = [item for item in egis.received if item.action == FAIL_BEFORE]
    waiting_id = refused.batch["id"]
    left_at = time.monotonic()
    page.goto(pages.url(LEAVE))
    wait_for(lambda: _names(app, std) == ["outage-1", "outage-2"], timeout=20,
             what="the events, from the page hide", seen=lambda: _attempts(egis))
    assert time.monotonic() - left_at < 30, "not the retry, due 30 s after the refusal"
    assert _attempts(egis)[waiting_id] == [FAIL_BEFORE, "pass"]
    last_chance = [item for item in egis.received if item.batch["id"] == waiting_id][-1]
    assert last_chance.batch["compressed"] is False
    assert "content-encoding" not in last_chance.headers
    stored = page.evaluate("key => JSON.parse(localStorage['egis_batches_' + key])",
                           std.write_key)
    assert [batch["id"] for batch in stored] == [waiting_id], "stored until an answer settles it"
    page.goto(url)
    wait_for(lambda: _attempts(egis)[waiting_id] == [FAIL_BEFORE, "pass", "pass"],
             what="the next page's copy", seen=lambda: _attempts(egis))
    wait_for(lambda: page.evaluate(NOTHING_STORED), what="the copy answered")
    assert _names(app, std) == ["outage-1", "outage-2"]
    assert_sent_events_stored_once(app, std, egis)


def test_leaving_the_page_sends_what_is_queued(app, std, tracked, pages, page, egis):
    pages.pages[LEAVE] = "<p>no tracker here</p>"
    page.goto(tracked("/hide", std.write_key, flush_interval=600_000))
    tracker_ready(page)
    wait_for(lambda: egis.batches(), what="the first send")
    _track(page, "last-words")
    page.goto(pages.url(LEAVE))
    wait_for(lambda: _names(app, std) == ["last-words"])


def test_what_exceeds_the_keepalive_budget_waits_for_the_next_page(app, std, tracked, pages,
                                                                    page, egis):
    pages.pages[LEAVE] = "<p>no tracker here</p>"
    url = tracked("/big", std.write_key, flush_interval=600_000)
    page.goto(url)
    tracker_ready(page)
    wait_for(lambda: egis.batches(), what="the first send")
    # 40 events of 3 KB of random text: ~120 KB, more than fetch keepalive's 64 KiB even gzipped.
    page.evaluate("""() => { for (let i = 0; i < 40; i++) {
        const blob = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(2250))));
        egis.track('bulk-' + String(i).padStart(2, '0'), {blob});
    } }""")
    page.goto(pages.url(LEAVE))
    first = wait_for(lambda: len(_names(app, std)), what="the part that fits")
    assert 0 < first < 40, "a part is sent at once, the rest waits"
    page.goto(url)  # the next page of the site delivers the rest
    wait_for(lambda: len(_names(app, std)) == 40, timeout=40, what="all 40")
    assert _names(app, std) == [f"bulk-{i:02d}" for i in range(40)]
    assert_sent_events_stored_once(app, std, egis)
    for item in egis.received:
        assert item.batch is not None and len(item.batch["events"]) <= 50


def test_a_plan_gated_type_is_dropped_and_the_rest_resent(app, make_site, tracked, page, egis):
    free = make_site("free.localhost", "free")
    page.goto(tracked("/free", free.write_key, host="free.localhost"))
    tracker_ready(page)
    page.evaluate("egis.trackError(new Error('paid feature'))")
    _track(page, "free-event")
    page.mouse.click(5, 5)
    # The page view left at start, in a batch of its own that may be refused too (if vitals
    # joined it) and resent: wait for it as well.
    wait_for(lambda: {"pageview", "custom"} <= {e.type for e in stored_events(app, free.site.id)},
             what="the page view and the custom event")
    assert not {e.type for e in stored_events(app, free.site.id)} & GATED
    received = list(egis.received)
    gated = [item for item in received if _types(item) & GATED]
    assert any(item.status == 403 for item in gated), "the gated types were sent and refused"
    assert not any(item.status == 200 for item in gated)
    # The proxy notes egis's answer after egis has stored the batch: polled.
    with_event = wait_for(lambda: [item for item in list(egis.received) if item.status == 200
                                   and any(e.get("name") == "free-event"
                                           for e in item.batch["events"])],
                          what="the custom event's answer")
    assert {item.batch["id"] for item in with_event}.isdisjoint(
        {item.batch["id"] for item in gated}), "the rest goes under a new batch id"
    page.evaluate("egis.trackError(new Error('again'))")
    _track(page, "after")
    wait_for(lambda: "after" in _names(app, free))
    assert not any("again" in str(e) for item in egis.received for e in item.batch["events"]), \
        "a type refused once is not sent again from the page"
    assert "error" not in {e.type for e in stored_events(app, free.site.id)}


def test_session_per_tab_and_one_anonymous_id_per_browser(app, std, tracked, context, page):
    url = tracked("/s", std.write_key)
    page.goto(url)
    page.reload()
    other_tab = context.new_page()
    other_tab.goto(url)
    found = wait_for(lambda: len(found := [e for e in stored_events(app, std.site.id)
                                           if e.type == "pageview"]) >= 3 and found)
    # In the order the pages were opened: each page's batch may be stored before the one before.
    views = sorted(found, key=lambda view: view.client_ts)
    assert views[0].session_id == views[1].session_id != views[2].session_id
    assert len({v.anonymous_id for v in views}) == 1


def test_identify_joins_server_revenue_to_the_visit(app, client, std, tracked, page,
                                                    call_tool):
    page.goto(tracked("/buy", std.write_key) + "?utm_source=newsletter")
    tracker_ready(page)
    page.evaluate("async () => { egis.identify('user-7'); egis.track('checkout');"
                  " await egis.flush() }")
    # The page view left at start, unidentified, in a batch flush() does not wait for; only the
    # session ties it to user-7, and it may be stored after the identified batch.
    wait_for(lambda: {("pageview", None), ("custom", "user-7")}
             <= {(e.type, e.user_id) for e in stored_events(app, std.site.id)})
    response = post_json(client, "/api/server/events", {
        "eventName": "purchase", "identifiedUserId": "user-7", "amount": 19.99,
        "currency": "USD", "orderId": "order-1"}, std.server_headers())
    assert response.status_code == 200, response.data
    revenue = call_tool(std, "get_revenue")
    assert [(row["source"], row["currency"], row["net_minor"]) for row in revenue["by_source"]] \
        == [("newsletter", "USD", 1999)]


DO_NOT_TRACK = "Object.defineProperty(navigator, 'doNotTrack', {get: () => '1'})"
GLOBAL_PRIVACY_CONTROL = ("Object.defineProperty(navigator, 'globalPrivacyControl',"
                          " {get: () => true})")
PRIVACY = {
    "do-not-track": (DO_NOT_TRACK, {}),
    "global-privacy-control": (GLOBAL_PRIVACY_CONTROL, {}),
    "do-not-track-storage-free": (DO_NOT_TRACK, {"storage": "false"}),
    "global-privacy-control-storage-free": (GLOBAL_PRIVACY_CONTROL, {"storage": "false"}),
    "owner-excluded": ("localStorage.setItem('egis_ignore', 'true')", {}),
    "other-domains-only": ("", {"domains": "shop.example,www.shop.example"}),
}


@pytest.mark.parametrize("setting", list(PRIVACY))
def test_privacy_settings_send_nothing(app, std, tracked, pages, context, page, egis, setting):
    script, attributes = PRIVACY[setting]
    if script:
        context.add_init_script(script)
    pages.pages[LEAVE] = "<p>no tracker here</p>"
    page.goto(tracked("/private", std.write_key, **attributes))
    page.wait_for_function("() => window.egis && typeof window.egis.track == 'function'")
    page.evaluate("async () => { egis.track('x'); egis.trackGoal('y'); await egis.flush() }")
    page.goto(pages.url(LEAVE))
    time.sleep(0.5)  # a negative: give a stray keepalive request the time to arrive
    assert egis.received == []
    assert stored_events(app, std.site.id) == []


def test_do_not_track_can_be_overridden_by_the_site(app, std, tracked, context, page):
    context.add_init_script(DO_NOT_TRACK)
    page.goto(tracked("/dnt-off", std.write_key, respect_dnt="false"))
    wait_for(lambda: stored_events(app, std.site.id), what="the page view")
