"""What the tracker records by itself and through window.egis, as stored by a live egis.

Each test loads a page (origin http://localhost:<port>) whose tag loads /tracker.js from egis
(http://127.0.0.1:<port>), acts in real Chromium, then polls the database for the events.
"""
import json

import pytest

from models import Event
from tests.fixtures import ROOT
from tests.fixtures.browser import tracker_ready
from tests.fixtures.database import BACKEND
from tests.fixtures.helpers import wait_for
from tests.fixtures.tracking import stored_events

VITALS = {"lcp", "inp", "cls", "fcp", "ttfb"}
TALL = "<div style='height:4000px'>tall</div><p id='end'>end</p>"


def of_type(app, site, type_: str) -> list[Event]:
    return [e for e in stored_events(app, site.site.id) if e.type == type_]


def wait_events(app, site, type_: str, count: int = 1) -> list[Event]:
    return wait_for(lambda: len(found := of_type(app, site, type_)) >= count and found,
                    what=f"{count} {type_} event(s)")


# The tracker does the same whatever database egis stores in: once, on PostgreSQL, is enough.
pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    BACKEND == "sqlite", reason="browser tests run on PostgreSQL")]


@pytest.fixture
def std(make_site):
    return make_site("localhost", "standard")


def test_page_view_with_the_page_fields_and_the_visitor(app, std, tracked, page, egis):
    url = tracked("/pricing", std.write_key, title="Pricing")
    page.goto(url + "?utm_source=newsletter&utm_medium=email")
    view = wait_events(app, std, "pageview")[0]
    assert view.page_url == url + "?utm_source=newsletter&utm_medium=email"
    assert view.page_title == "Pricing"
    assert view.referrer in ("", None)
    assert view.properties["utm_source"] == "newsletter"
    assert view.properties["utm_medium"] == "email"
    assert view.session_id and view.anonymous_id and view.user_id is None
    sent = egis.received[0]
    assert sent.headers["origin"] == url.rsplit("/", 1)[0]  # cross-origin, with a preflight
    assert sent.headers["x-api-key"] == std.write_key
    assert sent.headers["content-encoding"] == "gzip" and sent.batch["compressed"] is True


def test_spa_navigation_is_a_page_view_each(app, std, tracked, page):
    url = tracked("/app", std.write_key)
    page.goto(url)
    tracker_ready(page)
    page.evaluate("history.pushState({}, '', '/app/settings')")
    page.evaluate("history.replaceState({}, '', '/app/settings?tab=2')")
    page.evaluate("history.pushState({}, '', '/app/settings?tab=2#part')")  # fragment only
    page.go_back()  # popstate back to /app/settings?tab=2 ... same path: nothing new
    page.go_back()  # popstate to /app
    views = sorted(wait_events(app, std, "pageview", 4), key=lambda view: view.client_ts)
    paths = [v.page_url.split(":", 2)[2].split("/", 1)[1] for v in views]
    assert paths == ["app", "app/settings", "app/settings?tab=2", "app"]
    assert views[1].referrer == url  # an SPA view's referrer is the view before
    assert len({v.session_id for v in views}) == 1


def test_clicks_on_links_and_buttons_and_goal_elements(app, std, tracked, page):
    url = tracked("/links", std.write_key, body=(
        "<a id='out' class='cta  big' href='https://other.example/x'>Elsewhere</a>"
        "<a id='pdf' href='/files/report.pdf' onclick='event.preventDefault()'>Report</a>"
        "<button id='buy' data-goal='checkout'>Buy <b>now</b></button>"
        "<p id='plain'>plain text</p>"))
    page.goto(url)
    tracker_ready(page)
    page.evaluate("document.getElementById('out').addEventListener('click', "
                  "e => e.preventDefault())")
    page.click("#out")
    page.click("#pdf")
    page.click("#buy b")
    page.click("#plain")  # not a link or button: no click event
    clicks = wait_events(app, std, "click", 3)
    by_id = {c.properties["attributes"]["id"]: c.properties for c in clicks}
    assert set(by_id) == {"out", "pdf", "buy"}
    assert by_id["out"]["element"] == "a" and by_id["out"]["outbound"] is True
    assert by_id["out"]["attributes"] == {"id": "out", "class": "cta big", "text": "Elsewhere",
                                          "href": "https://other.example/x"}
    assert by_id["pdf"]["download"] is True and "outbound" not in by_id["pdf"]
    assert by_id["buy"]["element"] == "button" and by_id["buy"]["attributes"]["text"] == "Buy now"
    assert set(by_id["buy"]["position"]) == {"x", "y"}
    goals = wait_events(app, std, "goal")
    assert [g.name for g in goals] == ["checkout"]


def test_scroll_depth_once_each_per_page_view(app, std, tracked, page):
    page.set_viewport_size({"width": 800, "height": 600})
    url = tracked("/long", std.write_key, body=TALL)
    page.goto(url)
    tracker_ready(page)
    page.mouse.wheel(0, 1200)
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    page.evaluate("window.scrollTo(0, 0)")
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    depths = [e.properties["depth"] for e in wait_events(app, std, "scroll", 4)]
    assert sorted(depths) == [25, 50, 75, 100]
    page.evaluate("history.pushState({}, '', '/long/next')")  # a new page view starts again
    page.evaluate("window.scrollTo(0, 0); window.scrollTo(0, document.body.scrollHeight)")
    assert sorted(e.properties["depth"] for e in wait_events(app, std, "scroll", 8)) \
        == [25, 25, 50, 50, 75, 75, 100, 100]


def test_form_submit_sends_field_names_only(app, std, tracked, page, egis):
    url = tracked("/signup", std.write_key, body=(
        "<form name='signup' onsubmit='event.preventDefault()'>"
        "<input name='company' value='ACME'><textarea name='message'>hi</textarea>"
        "<select name='plan'><option>pro</option></select>"
        "<input type='email' name='contact' value='a@b.example'>"
        "<input type='password' name='pw' value='hunter2'>"
        "<input type='tel' name='mobile' value='+4412345'>"
        "<input name='number' autocomplete='cc-number' value='4111111111111111'>"
        "<input type='hidden' name='csrf' value='secret'>"
        "<button type='submit' name='go'>Send</button></form>"))
    page.goto(url)
    tracker_ready(page)
    page.click("button")
    submitted = wait_events(app, std, "form_submit")[0]
    assert submitted.properties == {"formName": "signup", "fields": ["company", "message", "plan"]}
    raw = json.dumps(egis.batches())
    for secret in ("ACME", "hunter2", "a@b.example", "4111111111111111", "+4412345", "csrf"):
        assert secret not in raw


def test_errors_and_unhandled_rejections(app, std, tracked, page):
    url = tracked("/broken", std.write_key)
    page.goto(url)
    tracker_ready(page)
    page.evaluate("setTimeout(() => { throw new TypeError('boom') }, 0)")
    page.evaluate("() => { Promise.reject(new Error('nope')) }")
    errors = wait_events(app, std, "error", 2)
    messages = sorted(e.properties["message"] for e in errors)
    assert messages[0].endswith("boom") and messages[1].endswith("nope")
    assert all(e.properties.get("stack") for e in errors)
    assert {e.properties["context"] for e in errors} >= {"unhandledrejection"}


def test_web_vitals_land_in_the_spec_shape_and_get_web_vitals_reads_them(
        app, std, tracked, page, pages, egis, call_tool):
    url = tracked("/vitals", std.write_key, body="<h1>Hello</h1><p>" + "text " * 200 + "</p>")
    page.goto(url)
    tracker_ready(page)
    page.click("h1")  # an interaction: LCP is final, INP has an input
    page.goto(pages.url("/elsewhere"))  # leaving reports the rest (page hide)
    samples = wait_for(lambda: {key for e in of_type(app, std, "performance")
                                for key in e.properties} >= {"lcp", "fcp", "ttfb", "cls"}
                       and of_type(app, std, "performance"), what="lcp, fcp, ttfb and cls",
                       seen=lambda: [b["events"] for b in egis.batches()])
    for e in samples:
        assert set(e.properties) <= VITALS
        assert all(isinstance(v, (int, float)) and v >= 0 for v in e.properties.values())
    vitals = call_tool(std, "get_web_vitals")["site_vitals"]
    for metric in ("lcp", "fcp", "ttfb", "cls"):
        assert vitals[metric]["samples"] >= 1, metric


def test_heartbeat_every_15_seconds_of_visibility(app, std, tracked, page):
    page.clock.install()
    url = tracked("/read", std.write_key)
    page.goto(url)
    tracker_ready(page)
    page.clock.run_for(14_000)
    page.clock.run_for(2_000)  # 16 s: the first heartbeat, then the send timer
    wait_events(app, std, "heartbeat", 1)
    page.clock.run_for(15_500)
    assert len(wait_events(app, std, "heartbeat", 2)) == 2


def test_the_six_methods(app, std, tracked, page):
    url = tracked("/methods", std.write_key)
    page.goto(url)
    tracker_ready(page)
    page.evaluate("""async () => {
        egis.track('video_play', {seconds: 12, amount: 5});
        egis.trackGoal('signup', {plan: 'pro'});
        egis.trackPageView('/virtual/step-2', 'Step 2');
        egis.identify('user-42');
        egis.trackError(new Error('handled'), {where: 'checkout'});
        await egis.flush();
    }""")
    events = wait_for(lambda: len(found := stored_events(app, std.site.id)) >= 5 and found)
    by_type = {e.type: e for e in events if e.type != "pageview" or e.page_url.endswith("step-2")}
    assert by_type["custom"].name == "video_play"
    assert by_type["custom"].properties == {"seconds": 12}  # money keys are stripped
    assert by_type["goal"].name == "signup" and by_type["goal"].properties == {"plan": "pro"}
    virtual = by_type["pageview"]
    assert virtual.page_url == url.rsplit("/", 1)[0] + "/virtual/step-2"
    assert virtual.page_title == "Step 2"
    error = by_type["error"]
    assert error.properties["message"].endswith("handled")
    assert error.properties["context"] == {"where": "checkout"}
    assert error.user_id == "user-42"  # identify() applies to what is sent after it


def test_identify_refuses_an_email_address(app, std, tracked, page):
    page.goto(tracked("/who", std.write_key))
    tracker_ready(page)
    page.evaluate("async () => { egis.identify('someone@example.com'); "
                  "egis.track('after'); await egis.flush() }")
    after = wait_for(lambda: [e for e in stored_events(app, std.site.id) if e.name == "after"])
    assert after[0].user_id is None
    assert any("e-mail" in warning for warning in page.warnings)


def test_calls_before_the_script_loads_are_replayed(app, std, tracked, page):
    stub = next(line for line in (ROOT / "README.md").read_text().splitlines()
                if line.startswith("<script>window.egis="))  # the documented stub, verbatim
    stub += ("<script>egis.identify('early-user');egis.track('early',{n:1});"
             "egis.trackGoal('early_goal')</script>")
    page.goto(tracked("/stub", std.write_key, head=stub))
    names = wait_for(lambda: {e.name for e in stored_events(app, std.site.id)}
                     >= {"early", "early_goal"} and stored_events(app, std.site.id))
    early = next(e for e in names if e.name == "early")
    assert early.properties == {"n": 1} and early.user_id == "early-user"


def test_each_automatic_capture_can_be_switched_off(app, std, tracked, page, egis):
    off = dict.fromkeys(("pageviews", "clicks", "scroll", "forms", "vitals", "errors",
                         "heartbeat"), "false")
    page.clock.install()
    page.goto(tracked("/quiet", std.write_key, body=TALL + (
        "<a id='l' href='#x'>link</a><form onsubmit='event.preventDefault()'>"
        "<input name='q'><button>go</button></form>"), **off))
    tracker_ready(page)
    page.click("#l")
    page.click("button")
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    # Thrown from a microtask, which the installed clock does not fake: from a timer it could
    # still be pending when run_for fires it, and run_for would then raise it here.
    page.evaluate("queueMicrotask(() => { throw new Error('quiet') })")
    page.clock.run_for(20_000)  # a heartbeat's worth of visible time
    page.evaluate("async () => { egis.track('only-this'); await egis.flush() }")
    events = wait_for(lambda: stored_events(app, std.site.id), what="the custom event")
    assert [(e.type, e.name) for e in events] == [("custom", "only-this")]
    assert [[e["type"] for e in b["events"]] for b in egis.batches()] == [["custom"]]
