"""The `query` tool's answers from the rollups (app.analytics.period_rows): the
visit pages for event:page, the quarter-hour counts for event sums by time and type. Every
figure is worked out by hand from the definitions (docs/AGENTS.md), so an answer read from a rollup
is the answer the events give, at the period's edges too.

The site is in UTC; the period is 11 April 2026 (00:00 to 24:00).
  S1 A    11th 10:00 pv /a, 10:01 click /a, 10:02 pv /b
  S2 A    11th 15:00 pv /a                        (A's second visit: one visitor on /a)
  S3 B    10th 23:55 pv /a | 11th 00:05 click /a, 00:06 pv /c    (crosses the start)
  S4 C    10th 23:50 pv /a | 11th 00:02 click /b   (crosses it, no page view in the period:
                                                   no visit there, one event)
  S5 A, E 11th 12:00 pv /a (anonymous id A), 12:01 pv /b (E): one visit of visitor E,
                                                   the larger id (app.visits)
  S6 F    11th 13:00 pv /b sampled (weight 2), 13:01 click /c (weight 1): the visit weighs 2
  S7 G    11th 23:50 pv /a | 12th 00:10 pv /d      (crosses the end)
  S8 H    11th 16:00 click /b                      (no page view: no visit, one event)
  a goal without a session, 11th 14:00, on /a; another site's page view on /a.
In the period, per page: visits having an event there, their visitors, page views, events:
  /a  S1 S2 S3 S5 S7 = 5 visits; A B E G = 4 visitors; page views S1 S2 S5 S7 = 4;
      events 2 + 1 + 1 + 1 + 1 + the goal = 7
  /b  S1 S5 S6(2) = 4 visits (S4 and S8 are none); A E F(2) = 4 visitors; page views
      1 + 1 + 2 = 4; events 1 + S4's 1 + 1 + 2 + S8's 1 = 6
  /c  S3 S6(2) = 3 visits; B F(2) = 3 visitors; page views 1; events 1 + 1 = 2
Totals: visits S1 S2 S3 S5 S6(2) S7 = 7; visitors A B E F(2) G = 6; page views 2 + 1 + 1 + 2
+ 2 + 1 = 9; events 3 + 1 + 2 + 1 + 2 + 3 + 1 + 1 + 1 = 15.
"""
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from tests.fixtures.helpers import site_with_events, tool_result
from tests.fixtures.visit_edges import ev, rows

DAY = {"from": "2026-04-11", "to": "2026-04-11"}
PAGE_METRICS = ["visitors", "visits", "pageviews", "events"]


def dataset(site_id: int, other_id: int) -> list[dict[str, Any]]:
    d = datetime
    goal = ev(site_id, None, None, "goal", d(2026, 4, 11, 14, 0), "/a", name="signup")
    return [
        ev(site_id, "s1", "A", "pageview", d(2026, 4, 11, 10, 0), "/a", "(direct)"),
        ev(site_id, "s1", "A", "click", d(2026, 4, 11, 10, 1), "/a"),
        ev(site_id, "s1", "A", "pageview", d(2026, 4, 11, 10, 2), "/b", "(direct)"),
        ev(site_id, "s2", "A", "pageview", d(2026, 4, 11, 15, 0), "/a", "(direct)"),
        ev(site_id, "s3", "B", "pageview", d(2026, 4, 10, 23, 55), "/a", "(direct)"),
        ev(site_id, "s3", "B", "click", d(2026, 4, 11, 0, 5), "/a"),
        ev(site_id, "s3", "B", "pageview", d(2026, 4, 11, 0, 6), "/c", "(direct)"),
        ev(site_id, "s4", "C", "pageview", d(2026, 4, 10, 23, 50), "/a", "(direct)"),
        ev(site_id, "s4", "C", "click", d(2026, 4, 11, 0, 2), "/b"),
        ev(site_id, "s5", "A", "pageview", d(2026, 4, 11, 12, 0), "/a", "(direct)"),
        ev(site_id, "s5", "E", "pageview", d(2026, 4, 11, 12, 1), "/b", "(direct)"),
        ev(site_id, "s6", "F", "pageview", d(2026, 4, 11, 13, 0), "/b", "(direct)", weight=2),
        ev(site_id, "s6", "F", "click", d(2026, 4, 11, 13, 1), "/c"),
        ev(site_id, "s8", "H", "click", d(2026, 4, 11, 16, 0), "/b"),
        ev(site_id, "s7", "G", "pageview", d(2026, 4, 11, 23, 50), "/a", "(direct)"),
        ev(site_id, "s7", "G", "pageview", d(2026, 4, 12, 0, 10), "/d", "(direct)"),
        goal,
        ev(other_id, "o1", "Z", "pageview", d(2026, 4, 11, 10, 0), "/a", "(direct)"),
    ]


@pytest.fixture
def tool(app, make_site) -> Callable[..., dict[str, Any]]:
    site = site_with_events(app, make_site, "r.example", dataset, timezone="UTC")
    client = app.test_client()

    def call(**arguments: Any) -> dict[str, Any]:
        result = tool_result(client, site.server_headers(), "query", {**DAY, **arguments})
        assert result["isError"] is False, result["content"]
        return result["structuredContent"]

    return call


def test_pages_by_hand(tool):
    result = tool(metrics=PAGE_METRICS, dimensions=["event:page"])
    assert rows(result) == [("/a", 4, 5, 4, 7), ("/b", 4, 4, 4, 6), ("/c", 3, 3, 1, 2)]
    assert result["totals"] == [6, 7, 9, 15]
    assert (result["total_rows"], result["estimated"]) == (3, True)


def test_pages_by_their_page_views(tool):
    """Page views alone (get_top_pages' filter): a visit counts on the pages it viewed; the
    clicks and the goal are not selected."""
    result = tool(metrics=PAGE_METRICS, dimensions=["event:page"],
                  filters=[["is", "event:type", ["pageview"]]])
    # /a: S1 S2 S5 S7, visitors A E G; /b: S1 S5 S6(2); /c: S3
    assert rows(result) == [("/b", 4, 4, 4, 4), ("/a", 3, 4, 4, 4), ("/c", 1, 1, 1, 1)]
    # every visit has a page view in the period: all 7, 6 visitors, 9 page views
    assert result["totals"] == [6, 7, 9, 9]


def test_a_page_filter_without_a_dimension(tool):
    """The visits with an event on a page matching `/a*`: each counted once, on all its pages'
    events that match."""
    result = tool(metrics=PAGE_METRICS, filters=[["matches", "event:page", ["/a*"]]])
    assert result["totals"] == [4, 5, 4, 7]
    result = tool(metrics=PAGE_METRICS, filters=[["contains", "event:page", ["b", "c"]]])
    # /b and /c: S1 S3 S5 S6(2) visits = 5, visitors A B E F(2) = 5, page views 1+1+1+2 = 5,
    # events 6 + 2
    assert result["totals"] == [5, 5, 5, 8]
    assert rows(tool(metrics=["visitors", "percentage"], dimensions=["event:page"],
                     filters=[["is_not", "event:page", ["/a"]]])) == [
        ("/b", 4, 80.0), ("/c", 3, 60.0)]  # of the query's 5 visitors: A B E F(2)


def test_events_by_hour_in_a_zone_three_quarters_off_the_hour(app, make_site):
    """Asia/Kathmandu is UTC+5:45: its hours start at a quarter past, so each quarter hour of
    counts falls in one local hour."""
    def events(site_id: int, _other: int) -> list[dict[str, Any]]:
        d = datetime
        return [ev(site_id, "k1", "K", "pageview", d(2026, 4, 11, 0, 10), "/", "(direct)"),
                ev(site_id, "k1", "K", "click", d(2026, 4, 11, 0, 14, 59), "/"),
                ev(site_id, "k1", "K", "pageview", d(2026, 4, 11, 0, 15), "/x", "(direct)"),
                ev(site_id, "k1", "K", "custom", d(2026, 4, 11, 1, 14), "/x", name="play",
                   weight=1),
                ev(site_id, "k1", "K", "pageview", d(2026, 4, 10, 18, 14), "/y", "(direct)")]

    site = site_with_events(app, make_site, "k.example", events, timezone="Asia/Kathmandu")
    result = tool_result(app.test_client(), site.server_headers(), "query", {
        **DAY, "metrics": ["events", "pageviews"], "dimensions": ["time:hour"]})
    # 00:10 and 00:14:59 UTC are 05:55 and 05:59:59 local; 00:15 is 06:00; 01:14 is 06:59;
    # 18:14 on the 10th is 23:59 on the 10th: outside
    assert rows(result["structuredContent"]) == [("2026-04-11T05:00", 2, 1),
                                                 ("2026-04-11T06:00", 2, 1)]
    by_type = tool_result(app.test_client(), site.server_headers(), "query", {
        **DAY, "metrics": ["events"], "dimensions": ["event:type"]})["structuredContent"]
    assert rows(by_type) == [("pageview", 2), ("click", 1), ("custom", 1)]


def test_a_zone_off_the_quarter_hour_reads_the_events(app, make_site):
    """Liberia kept UTC-0:44:30 until 1972: its days began at 00:44:30 UTC, within a quarter
    hour, so the counts per quarter hour cannot split them; the events can."""
    def events(site_id: int, _other: int) -> list[dict[str, Any]]:
        d = datetime
        return [ev(site_id, "m1", "M", "pageview", d(1971, 6, 1, 0, 40), "/", "(direct)"),
                ev(site_id, "m1", "M", "click", d(1971, 6, 1, 0, 44, 29), "/"),
                ev(site_id, "m2", "N", "pageview", d(1971, 6, 1, 0, 44, 30), "/", "(direct)"),
                ev(site_id, "m2", "N", "click", d(1971, 6, 2, 0, 44, 29), "/")]

    site = site_with_events(app, make_site, "m.example", events, timezone="Africa/Monrovia")
    result = tool_result(app.test_client(), site.server_headers(), "query", {
        "from": "1971-06-01", "to": "1971-06-01", "metrics": ["events", "pageviews"],
        "dimensions": ["time:day"]})["structuredContent"]
    assert rows(result) == [("1971-06-01", 2, 1)]
    assert result["totals"] == [2, 1]
