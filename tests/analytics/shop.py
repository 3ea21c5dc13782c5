"""A shop whose every figure is worked out by hand below (never by egis's own code), for the
tests of one read model (test_one_read_model.py) and of null rows (test_null_rows.py).

The site shop.example (UTC) gets its traffic through ingest, over HTTP: browser batches (an
Origin, Chrome's User-Agent, from 127.0.0.1: a local address, so no country) and backend
batches (no Origin: no browser context), then trusted revenue. Times are offsets in seconds
from T0, two hours ago; the period is yesterday and today.

  s1  visitor A (userId u1)  browser  0 pv /  (referrer www.google.com/search -> Google,
                                      Organic Search); 60 pv /pricing (referrer the site
                                      itself); 90 goal Signup                       90 s
  s2  visitor B              browser  0 pv /pricing?utm_source=newsletter&utm_medium=email
                                      (-> newsletter, Email); 30 click              30 s
  s3  visitor B              browser  0 pv / (no referrer -> (direct), Direct)  bounce  0 s
  s4  visitor C              browser  0 pv /blog/a (news.ycombinator.com -> Hacker News,
                                      Organic Social); 20 scroll (passive)   bounce 20 s
  s5  visitor D              backend  0 pv /docs (referrer the site itself -> (direct),
                                      Direct)                                bounce  0 s
  s6  visitor E              backend  0 pv /docs (no referrer)               bounce  0 s

By hand: visits 6; visitors A-E 5; page views 2+1+1+1+1+1 = 7; events 3+2+1+2+1+1 = 10
(pageview 7, goal 1, click 1, scroll 1); bounces s3-s6: 4 of 6 = 66.7 %; visit duration
(90+30+0+20+0+0)/6 = 23.3 -> 23 s; views per visit 7/6 = 1.17; Signup converts 1 visit of 6:
16.7 %. Sources by visits: (direct) 3 (s3, s5, s6; visitors B, D, E), Google, newsletter,
Hacker News 1 each; channels: Direct 3, Organic Search, Email, Organic Social 1 each.

Revenue (USD): 10.00 by identifiedUserId u1 (A's visit s1: Google, Organic Search), 5.50 with
sessionId s2 (newsletter, Email), -2.00 with sessionId s3 ((direct), Direct: a refund), 3.00
linked to nothing ((unattributed)). Gross 1850, refunds 200, net 1650 cents, 3 orders.
"""
from typing import Any

import orjson

from tests.tracking.helpers import CHROME_UA, batch, event, now_ms, post_json

DOMAIN = "shop.example"
ORIGIN = f"https://{DOMAIN}"
VISITORS, VISITS, PAGEVIEWS, EVENTS = 5, 6, 7, 10
BOUNCE_RATE, VISIT_DURATION, VIEWS_PER_VISIT, SIGNUP_RATE = 66.7, 23, 1.17, 16.7
EVENTS_BY_TYPE = {"pageview": 7, "click": 1, "goal": 1, "scroll": 1}
SOURCES = [("(direct)", 3, 3), ("Google", 1, 1), ("Hacker News", 1, 1), ("newsletter", 1, 1)]
CHANNELS = [("Direct", 3), ("Email", 1), ("Organic Search", 1), ("Organic Social", 1)]
REVENUE_BY_SOURCE = [("Google", 1000, 1), ("newsletter", 550, 1), ("(unattributed)", 300, 1),
                     ("(direct)", -200, 0)]
REVENUE_BY_CHANNEL = [("Organic Search", 1000, 1), ("Email", 550, 1), ("(unattributed)", 300, 1),
                      ("Direct", -200, 0)]
PAGES = [("/", 2, 2), ("/docs", 2, 2), ("/pricing", 2, 2), ("/blog/a", 1, 1)]


def _visit(session: str, visitor: str, events: list[tuple[int, str, dict[str, Any]]],
           t0: int, **fields: Any) -> dict[str, Any]:
    return batch([event(kind, timestamp=t0 + offset * 1000, **values)
                  for offset, kind, values in events],
                 sessionId=session, anonymousId=visitor, timestamp=now_ms(), **fields)


def ingest(client, site_keys) -> None:
    """The traffic of the module docstring, through ingest."""
    t0 = now_ms() - 2 * 3600 * 1000
    page = f"{ORIGIN}/"
    browser = {"Origin": ORIGIN, "User-Agent": CHROME_UA, **site_keys.write_headers()}
    backend = {"User-Agent": "shop-backend/1.0", **site_keys.write_headers()}
    visits = [
        (browser, _visit("s1", "A", [
            (0, "pageview", {"pageUrl": page, "referrer": "https://www.google.com/search?q=x"}),
            (60, "pageview", {"pageUrl": f"{ORIGIN}/pricing", "referrer": page}),
            (90, "goal", {"pageUrl": f"{ORIGIN}/pricing", "name": "Signup"})], t0,
            userId="u1")),
        (browser, _visit("s2", "B", [
            (0, "pageview", {"pageUrl": f"{ORIGIN}/pricing?utm_source=newsletter"
                                        "&utm_medium=email"}),
            (30, "click", {"pageUrl": f"{ORIGIN}/pricing"})], t0)),
        (browser, _visit("s3", "B", [(0, "pageview", {"pageUrl": page})], t0)),
        (browser, _visit("s4", "C", [
            (0, "pageview", {"pageUrl": f"{ORIGIN}/blog/a",
                             "referrer": "https://news.ycombinator.com/item?id=1"}),
            (20, "scroll", {"pageUrl": f"{ORIGIN}/blog/a", "properties": {"depth": 50}})],
            t0)),
        (backend, _visit("s5", "D", [(0, "pageview", {"pageUrl": f"{ORIGIN}/docs",
                                                      "referrer": f"{ORIGIN}/x"})], t0)),
        (backend, _visit("s6", "E", [(0, "pageview", {"pageUrl": f"{ORIGIN}/docs"})], t0)),
    ]
    for headers, body in visits:
        response = post_json(client, "/api/events", body, headers)
        assert response.status_code == 200, response.get_data()
    for order, link in (("o1", {"identifiedUserId": "u1", "revenue_cents": 1000}),
                        ("o2", {"sessionId": "s2", "revenue_cents": 550}),
                        ("r1", {"sessionId": "s3", "revenue_cents": -200}),
                        ("o3", {"revenue_cents": 300})):
        response = client.post("/api/server/events", headers=site_keys.server_headers(),
                               data=orjson.dumps({"eventName": "purchase", "currency": "USD",
                                                  "orderId": order, **link}),
                               content_type="application/json")
        assert response.status_code == 200, response.get_data()


def rows(result: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(*row["dimensions"], *row["metrics"]) for row in result["results"]]


