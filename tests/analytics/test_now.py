"""`query` over a rolling window (period 5min, 30min: who is on the site now), on a site whose
every figure is worked out below. The clock is the real one: times are offsets in seconds from
T, the moment of ingest, and the call comes less than 20 s later (d), so no event lies within
20 s of a window's edge. The site is in Europe/Berlin (UTC+01:00 in December, UTC+02:00 in
summer: `from`/`to` carry the offset).

  a1  visitor A  -580 pv /article, then a heartbeat every 60 s from -570 to -30 (10): a
                 reader of one page, who sends nothing else
  b1  visitor B  -1200 pv / (referrer news.ycombinator.com), -1140 pv /pricing,
                 -1130 goal Signup
  c1  visitor C  -60 heartbeat only: events, but no visit (no page view)

5min, [T+d-300, T+d]: a1's heartbeats -270, -210, -150, -90, -30 and c1's: visitors 1 (A),
visits 1, page views 0, events 6; A's visit:entry_page is /article, its page view lying before
the window. The window before, [T+d-600, T+d-300]: a1's -580 pv and 5 heartbeats (-570 to
-330): visitors 1, visits 1, page views 1, events 6.
30min: visitors 2 (A, B), visits 2, page views 1 + 2 = 3, events 11 + 3 + 1 = 15; Signup
converts 1 visit of 2: 50.0 %. By time:minute a visit counts in the minute of its first event
in the window: b1 at T-1200, a1 at T-580.
"""
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.analytics.vocabulary import ROLLING_METRICS
from models import Site, database
from tests.fixtures.mcp import sdk_calls
from tests.fixtures.tracking import CHROME_UA, batch, event, now_ms, post_json

DOMAIN = "now.example"
ORIGIN = f"https://{DOMAIN}"


def ingest(app, client, site_keys) -> int:
    """The traffic of the module docstring; T, in ms."""
    with app.app_context(), database.connection_context():
        Site.update(timezone="Europe/Berlin").where(Site.id == site_keys.site.id).execute()
    t = now_ms()
    article = f"{ORIGIN}/article"
    visits = {
        ("a1", "A"): [(-580, "pageview", {"pageUrl": article}),
                      *((-570 + 60 * k, "heartbeat", {"pageUrl": article}) for k in range(10))],
        ("b1", "B"): [(-1200, "pageview", {"pageUrl": f"{ORIGIN}/",
                                           "referrer": "https://news.ycombinator.com/"}),
                      (-1140, "pageview", {"pageUrl": f"{ORIGIN}/pricing"}),
                      (-1130, "goal", {"pageUrl": f"{ORIGIN}/pricing", "name": "Signup"})],
        ("c1", "C"): [(-60, "heartbeat", {"pageUrl": article})],
    }
    headers = {"Origin": ORIGIN, "User-Agent": CHROME_UA, **site_keys.write_headers()}
    for (session, visitor), events in visits.items():
        body = batch([event(kind, timestamp=t + offset * 1000, **values)
                      for offset, kind, values in events], sessionId=session,
                     anonymousId=visitor, timestamp=now_ms())
        response = post_json(client, "/api/events", body, headers)
        assert response.status_code == 200, response.get_data()
    return t


@pytest.fixture
def now_site(app, make_site):
    """The site with its traffic: (call(arguments) -> the MCP result of `query`, T)."""
    from tests.fixtures.helpers import tool_result
    site_keys = make_site(DOMAIN, "standard")
    client = app.test_client()
    t = ingest(app, client, site_keys)
    return (lambda arguments, tool="query": tool_result(
        client, site_keys.server_headers(), tool, arguments)), t


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result["isError"] is False, result
    return result["structuredContent"]


def refused(result: dict[str, Any]) -> str:
    assert result["isError"] is True, result
    return result["content"][0]["text"]


def rows(found: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(*row["dimensions"], *row["metrics"]) for row in found["results"]]


def test_five_minutes_count_a_reader_by_heartbeats(now_site):
    call, t = now_site
    found = ok(call({"period": "5min", "metrics": ["visitors", "visits", "pageviews",
                                                   "events"]}))
    assert found["totals"] == [1, 1, 0, 6]
    start, end = (datetime.fromisoformat(found[key]) for key in ("from", "to"))
    assert end - start == timedelta(minutes=5)
    assert end.utcoffset() == datetime.now(UTC).astimezone(
        __import__("zoneinfo").ZoneInfo("Europe/Berlin")).utcoffset()
    assert abs(end.timestamp() * 1000 - t) < 20_000
    # the visit's values are its first page view's, before the window
    assert rows(ok(call({"period": "5min", "metrics": ["visitors"],
                         "dimensions": ["visit:entry_page"]}))) == [("/article", 1)]
    # C's heartbeat is in no visit
    assert rows(ok(call({"period": "5min", "metrics": ["visitors", "events"],
                         "dimensions": ["event:page"]}))) == [("/article", 1, 6)]
    # an event filter: the heartbeats on /article select A's visit
    assert ok(call({"period": "5min", "metrics": ["visitors", "events"],
                    "filters": [["is", "event:page", ["/article"]]]}))["totals"] == [1, 6]


def test_previous_period_is_the_window_before(now_site):
    call, _t = now_site
    found = ok(call({"period": "5min", "metrics": ["visitors", "visits", "pageviews",
                                                   "events"], "compare": "previous_period"}))
    assert found["totals"] == [1, 1, 0, 6]
    assert found["comparison"]["totals"] == [1, 1, 1, 6]
    assert found["comparison"]["to"] == found["from"]


def test_thirty_minutes_by_minute(now_site):
    call, t = now_site
    found = ok(call({"period": "30min", "metrics": ["visitors", "visits", "pageviews",
                                                    "events"]}))
    assert found["totals"] == [2, 2, 3, 15]
    zone = __import__("zoneinfo").ZoneInfo("Europe/Berlin")

    def minute(offset: int) -> str:
        at = datetime.fromtimestamp(t / 1000 + offset, UTC).astimezone(zone)
        return at.strftime("%Y-%m-%dT%H:%M")

    by_minute = ok(call({"period": "30min", "metrics": ["visits"],
                         "dimensions": ["time:minute"]}))
    assert rows(by_minute) == [(minute(-1200), 1), (minute(-580), 1)]
    goals = ok(call({"period": "30min", "metrics": ["conversion_rate"],
                     "dimensions": ["event:goal"]}))
    assert rows(goals) == [("Signup", 50.0)]
    pages = ok(call({"period": "30min", "metrics": ["pageviews"],
                     "dimensions": ["event:page"]}))
    assert sorted(rows(pages)) == [("/", 1), ("/article", 1), ("/pricing", 1)]


def test_refusals_after_their_valid_variants(now_site):
    call, _t = now_site
    ok(call({"period": "5min", "metrics": ["visitors"]}))
    text = refused(call({"period": "5min", "metrics": ["bounce_rate"]}))
    assert "bounce_rate" in text and ", ".join(ROLLING_METRICS) in text
    ok(call({"period": "today", "metrics": ["visits"], "dimensions": ["time:minute"]}))
    text = refused(call({"period": "7d", "metrics": ["visits"], "dimensions": ["time:minute"]}))
    assert "one day at most" in text and "time:hour" in text
    ok(call({"period": "today", "steps": [{"page": "/"}, {"page": "/pricing"}]}, "funnel"))
    text = refused(call({"period": "5min", "steps": [{"page": "/"}, {"page": "/pricing"}]},
                        "funnel"))
    assert "for `query`" in text
    ok(call({"period": "5min", "metrics": ["visitors"], "compare": "previous_period"}))
    text = refused(call({"period": "5min", "metrics": ["visitors"],
                         "compare": {"from": "2026-01-01", "to": "2026-01-01"}}))
    assert "rolling period" in text


@pytest.mark.slow
def test_who_is_on_the_site_now_through_the_sdk_client(app, make_site, start_server):
    site_keys = make_site(DOMAIN, "standard")
    live = start_server(workers=1)
    ingest(app, app.test_client(), site_keys)  # after the start: the call follows at once
    answers = sdk_calls(f"{live.url}/api/mcp", site_keys.server_key, {
        "now": ("query", {"period": "5min", "metrics": ["visitors", "visits", "events"]}),
        "bad": ("query", {"period": "5min", "metrics": ["visit_duration"]}),
    })
    assert answers["now"].is_error is False, answers["now"].content
    assert answers["now"].structured_content["totals"] == [1, 1, 6]
    assert answers["bad"].is_error is True
    assert "rolling period" in answers["bad"].content[0].text
