"""What the tracker keeps on the visitor's device: nothing at all with data-storage="false"
(its batches then carry "-" for egis to derive the visitor and the visit), and in the default
mode an anonymous id in localStorage that is renewed after 13 months.

An init script records every access to localStorage, sessionStorage (the window's getters and
every Storage method) and document.cookie, before any script of the page runs. What the tracker
sent is asserted on the batches the proxy passed on; what egis made of the "-" ids (one visitor
and one visit per browser, hashed, the address and the User-Agent kept nowhere) on the rows it
stored.
"""
import re
from datetime import UTC, datetime, timedelta

import pytest

from models import Event
from tests.fixtures.browser import tracker_ready
from tests.fixtures.database import BACKEND
from tests.fixtures.helpers import database_bytes, wait_for
from tests.fixtures.tracking import CHROME_UA, stored_events

LEAVE = "/left"  # a page without the tracker, on the same origin
STORAGE_FREE = {"storage": "false"}
HEX_ID = re.compile(r"[0-9a-f]{32}")  # a derived visitor or visit id
# Another browser, with a token of its own to look for in the database.
OTHER_BROWSER_UA = ("Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0 "
                    "Probe/5c81e2")
CLIENT_ADDRESS = "127.0.0.1"  # the browser's, as egis sees it: the proxy's, on the loopback

RECORD_DEVICE_STORAGE = """(() => {
  const accesses = window.deviceStorageAccesses = [];
  for (const method of ['getItem', 'setItem', 'removeItem', 'clear', 'key']) {
    const original = Storage.prototype[method];
    Storage.prototype[method] = function (...args) {
      accesses.push(`Storage.${method}(${args[0] ?? ''})`);
      return original.apply(this, args);
    };
  }
  const wrapGetter = (owner, name, setter) => {
    const { get, set } = Object.getOwnPropertyDescriptor(owner, name);
    Object.defineProperty(owner, name, {
      configurable: true,
      get() { accesses.push(`read ${name}`); return get.call(this); },
      ...(setter && { set(value) { accesses.push(`write ${name}`); set.call(this, value); } }),
    });
  };
  for (const name of ['localStorage', 'sessionStorage']) {
    wrapGetter(Object.getOwnPropertyDescriptor(window, name) ? window : Window.prototype, name);
  }
  wrapGetter(Storage.prototype, 'length');
  wrapGetter(Document.prototype, 'cookie', true);
})()"""
ACCESSES = "() => window.deviceStorageAccesses"

# The tracker does the same whatever database egis stores in: once, on PostgreSQL, is enough.
pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    BACKEND == "sqlite", reason="browser tests run on PostgreSQL")]


@pytest.fixture
def std(make_site):
    return make_site("localhost", "standard")


def _names(app, site) -> list[str]:
    return sorted(e.name for e in stored_events(app, site.site.id) if e.type == "custom")


def _stored_ids(app, site) -> set[tuple[str, str]]:
    """The (anonymous id, session id) pairs of the site's stored events."""
    return {(e.anonymous_id, e.session_id) for e in stored_events(app, site.site.id)}


def _batches_with(egis, name: str) -> list[dict]:
    return [batch for batch in egis.batches()
            if any(event.get("name") == name for event in batch["events"])]


def test_storage_free_touches_no_device_storage_and_sends_dash_ids(app, std, tracked, pages,
                                                                   context, page, egis):
    pages.pages[LEAVE] = "<p>no tracker here</p>"
    # What a default-mode visit left, and the owner's opt-out: neither is read.
    page.goto(pages.url(LEAVE))
    page.evaluate("() => { localStorage.egis_ignore = 'true'; localStorage.egis_aid = 'kept';"
                  " sessionStorage.egis_sid = JSON.stringify({id: 'tab', last: Date.now()}) }")
    context.add_init_script(RECORD_DEVICE_STORAGE)
    url = tracked("/free-of-storage", std.write_key, **STORAGE_FREE)
    page.goto(url)
    tracker_ready(page)
    page.evaluate("async () => { egis.identify('user-9'); egis.track('first-page');"
                  " await egis.flush() }")
    page.reload()
    tracker_ready(page)
    page.evaluate("async () => { egis.track('second-page'); await egis.flush() }")
    wait_for(lambda: _names(app, std) == ["first-page", "second-page"], what="both events")
    wait_for(lambda: len([e for e in stored_events(app, std.site.id) if e.type == "pageview"])
             == 2, what="both page views")
    assert page.evaluate(ACCESSES) == []
    batches = egis.batches()
    width = page.viewport_size["width"]
    assert {(b["anonymousId"], b["sessionId"]) for b in batches} == {("-", "-")}
    assert all(b["fingerprint"] == {"screenWidth": width} for b in batches)
    assert {b.get("userId") for b in _batches_with(egis, "first-page")} == {"user-9"}
    assert {b.get("userId") for b in _batches_with(egis, "second-page")} == {None}, \
        "identify() lasts for the page"
    ((visitor, visit),) = _stored_ids(app, std)
    assert HEX_ID.fullmatch(visitor) and HEX_ID.fullmatch(visit) and visitor != visit, \
        "both page loads are one visitor and one visit, derived by egis"
    page.goto(pages.url(LEAVE))
    left = page.evaluate("() => [localStorage.length, sessionStorage.length, document.cookie]")
    assert left == [2, 1, ""], "nothing added: the visit of the default mode's two keys, and " \
        "the tab's session, as they were"


def test_the_default_mode_uses_local_and_session_storage(app, std, tracked, context, page,
                                                         egis):
    """The control of the test above: the same recorder sees the default mode's accesses."""
    context.add_init_script(RECORD_DEVICE_STORAGE)
    page.goto(tracked("/with-storage", std.write_key))
    tracker_ready(page)
    page.evaluate("async () => { egis.track('stored'); await egis.flush() }")
    wait_for(lambda: _names(app, std) == ["stored"], what="the event")
    accesses = page.evaluate(ACCESSES)
    assert {"read localStorage", "read sessionStorage", "Storage.getItem(egis_ignore)",
            "Storage.setItem(egis_aid)", "Storage.setItem(egis_sid)"} <= set(accesses)
    assert not any("cookie" in access for access in accesses)
    (batch,) = _batches_with(egis, "stored")
    assert "-" not in (batch["anonymousId"], batch["sessionId"])
    assert batch["anonymousId"] == page.evaluate("localStorage.egis_aid")
    assert batch["fingerprint"] == {"screenWidth": page.viewport_size["width"]}


def test_storage_free_another_browser_is_another_visitor_and_no_address_is_stored(
        app, std, tracked, browser, page, egis):
    url = tracked("/two-browsers", std.write_key, **STORAGE_FREE)
    other_context = browser.new_context(user_agent=OTHER_BROWSER_UA)
    try:
        for browser_page in (page, other_context.new_page()):
            browser_page.goto(url)
            tracker_ready(browser_page)
            # Sent while the page is open, so with its context's User-Agent (a keepalive
            # request outliving its page would carry the browser's own: see conftest).
            browser_page.evaluate("egis.flush()")
        wait_for(lambda: [e.type for e in stored_events(app, std.site.id)].count("pageview")
                 == 2, what="both page views", seen=lambda: stored_events(app, std.site.id))
    finally:
        other_context.close()
    assert {b["anonymousId"] for b in egis.batches()} == {"-"}
    assert {r.headers["user-agent"] for r in egis.received} == {CHROME_UA, OTHER_BROWSER_UA}
    stored = _stored_ids(app, std)
    visitors, visits = {visitor for visitor, _ in stored}, {visit for _, visit in stored}
    assert len(visitors) == len(visits) == 2, stored
    assert all(HEX_ID.fullmatch(value) for value in visitors | visits), stored
    never_stored = (CLIENT_ADDRESS, CHROME_UA, OTHER_BROWSER_UA, "Probe/5c81e2")
    for event in stored_events(app, std.site.id):
        for column in Event._meta.sorted_field_names:
            value = str(getattr(event, column))
            assert not any(secret in value for secret in never_stored), (column, value)
    dump = database_bytes(app.config["DATABASE_URL"])
    assert all(visitor.encode() in dump for visitor in visitors), "the dump holds the events"
    for secret in never_stored:
        assert secret.encode() not in dump, secret


def test_storage_free_what_is_unsent_goes_when_the_page_is_left(app, std, tracked, pages,
                                                                context, page, egis):
    pages.pages[LEAVE] = "<p>no tracker here</p>"
    context.add_init_script(RECORD_DEVICE_STORAGE)
    page.goto(tracked("/leaving", std.write_key, flush_interval=600_000, **STORAGE_FREE))
    tracker_ready(page)
    wait_for(lambda: egis.batches(), what="the page view")
    page.evaluate("egis.track('last-words')")
    assert page.evaluate(ACCESSES) == []
    page.goto(pages.url(LEAVE))
    wait_for(lambda: _names(app, std) == ["last-words"], what="the keepalive send")
    (batch,) = _batches_with(egis, "last-words")
    assert (batch["anonymousId"], batch["sessionId"], batch["compressed"]) == ("-", "-", False)


def _months_ago(months: int) -> int:
    """Epoch milliseconds `months` calendar months before now (UTC; days after the 28th
    taken as the 28th, which every month has)."""
    now = datetime.now(UTC)
    month_index = now.year * 12 + now.month - 1 - months
    earlier = now.replace(year=month_index // 12, month=month_index % 12 + 1,
                          day=min(now.day, 28))
    return int(earlier.timestamp() * 1000)


@pytest.mark.parametrize(("age", "renewed"), [(12, False), (14, True)],
                         ids=["12-months-kept", "14-months-renewed"])
def test_the_anonymous_id_is_renewed_after_13_months(app, std, tracked, pages, page, egis, age,
                                                     renewed):
    pages.pages[LEAVE] = "<p>no tracker here</p>"
    page.goto(pages.url(LEAVE))
    created = _months_ago(age)
    page.evaluate("created => { localStorage.egis_aid = 'seeded';"
                  " localStorage.egis_aid_created = String(created) }", created)
    before = int(datetime.now(UTC).timestamp() * 1000)
    page.goto(tracked("/returning", std.write_key))
    tracker_ready(page)
    page.evaluate("async () => { egis.track('back'); await egis.flush() }")
    (batch,) = _batches_with(egis, "back")
    stored_id, stored_created = page.evaluate(
        "() => [localStorage.egis_aid, +localStorage.egis_aid_created]")
    assert stored_id == batch["anonymousId"]
    if renewed:
        assert stored_id != "seeded"
        assert before <= stored_created <= before + timedelta(minutes=1).total_seconds() * 1000
    else:
        assert (stored_id, stored_created) == ("seeded", created)
