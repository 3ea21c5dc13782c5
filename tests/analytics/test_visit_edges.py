"""Visits that cross a period's first or last instant, through the `query` and `funnel` tools.

A visit is a session id with at least one page view in the period, and its visit:* values are those
of its first page view in the period (docs/ARCHITECTURE.md, "Visits"). So a visit that crosses an
edge is clipped to the period: its page views, bounce, duration, entry and exit page and entry
source/country are those of its events in the period; time:* buckets it by its first event in the
period. Every figure below is worked out by hand.

The site is in Europe/Berlin, in April 2026 on CEST (UTC+2): a local day D runs from
D-1 22:00 UTC to D 22:00 UTC. Times are local; (UTC) is what occurred_at holds.
  E1 A w1  10th 23:40 (21:40) pv /a  Google, DE
           10th 23:55 (21:55) pv /b  (direct), DE
           11th 00:10 (22:10 on the 10th) pv /c  Bing, AT
           11th 00:20 (22:20 on the 10th) pv /d  (direct), AT
  E3 C w1  10th 23:50 (21:50) pv /a  Hacker News, US
           11th 00:05 (22:05 on the 10th) heartbeat, 00:06 (22:06) goal Signup
  E4 D w2  10th 23:58 (21:58) pv /a  Google, FR
           11th 00:03 (22:03 on the 10th) pv /e  (direct), FR
  E5 E w1  11th 10:00 (08:00) pv /c  Google, DE;  10:05 (08:05) pv /d  (direct), DE
  E6 F w1  10th 12:00 (10:00) pv /a  (direct), DE
  E2 B w1  14th 23:50 (21:50) pv /x  Google, DE
           15th 12:00 (10:00) pv /y  Mastodon, CH
           16th 00:05 (22:05 on the 15th) pv /w  (direct), CH
  E7 G w1  20th 23:50 (21:50) pv /m  Google, DE
           21st 00:00 (22:00 on the 20th: the 21st's first instant) pv /n  (direct), AT
  another site's page view on the 11th.

10 April (E1 ends after it, E3 and E4 too):
  E1: /a, /b: 2 page views, 21:40-21:55 = 900 s, entry /a (Google, DE), exit /b, no bounce
  E3: /a alone, no interaction in the period: a bounce, 0 s, Hacker News
  E4 (w2): /a alone: a bounce, 0 s, Google, FR
  E6: /a: a bounce, 0 s, (direct)
  visits 1+1+2+1 = 5, visitors A C D(2) F = 5, page views 2+1+2+1 = 6, events 6,
  bounce (1+2+1)/5 = 80.0, views per visit 6/5 = 1.2, duration 900/5 = 180.
11 April (E1, E3 and E4 start before it):
  E1: /c, /d: 2 page views, 22:10-22:20 = 600 s, entry /c (Bing, AT), exit /d, no bounce
  E3: a heartbeat and a goal, no page view: no visit, but 2 events
  E4 (w2): /e alone: a bounce, 0 s, entry and exit /e, (direct), FR
  E5: /c, /d: 300 s, entry /c (Google, DE), exit /d, no bounce
  visits 1+2+1 = 4, visitors A D(2) E = 4, page views 2+2+2 = 6, events 2+2+2+2 = 8,
  bounce 2/4 = 50.0, views per visit (2+2+2)/4 = 1.5, duration (600+0+300)/4 = 225.
15 April (E2 crosses both edges): /y alone: 1 page view, a bounce, 0 s, entry = exit = /y,
  Mastodon, CH (the whole visit: 3 page views, 87,300 s, /x to /w, Google, DE).
"""
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from tests.fixtures.helpers import site_with_events, tool_result
from tests.fixtures.visit_edges import ev, rows

DAY1 = {"from": "2026-04-10", "to": "2026-04-10"}
DAY2 = {"from": "2026-04-11", "to": "2026-04-11"}
DAY15 = {"from": "2026-04-15", "to": "2026-04-15"}
ALL = ["visitors", "visits", "pageviews", "events", "bounce_rate", "views_per_visit",
       "visit_duration"]


def dataset(site_id: int, other_id: int) -> list[dict[str, Any]]:
    d = datetime
    return [
        ev(site_id, "e1", "A", "pageview", d(2026, 4, 10, 21, 40), "/a", "Google", "DE"),
        ev(site_id, "e1", "A", "pageview", d(2026, 4, 10, 21, 55), "/b", "(direct)", "DE"),
        ev(site_id, "e1", "A", "pageview", d(2026, 4, 10, 22, 10), "/c", "Bing", "AT"),
        ev(site_id, "e1", "A", "pageview", d(2026, 4, 10, 22, 20), "/d", "(direct)", "AT"),
        ev(site_id, "e3", "C", "pageview", d(2026, 4, 10, 21, 50), "/a", "Hacker News", "US"),
        ev(site_id, "e3", "C", "heartbeat", d(2026, 4, 10, 22, 5), "/a"),
        ev(site_id, "e3", "C", "goal", d(2026, 4, 10, 22, 6), "/a", name="Signup"),
        ev(site_id, "e4", "D", "pageview", d(2026, 4, 10, 21, 58), "/a", "Google", "FR", 2),
        ev(site_id, "e4", "D", "pageview", d(2026, 4, 10, 22, 3), "/e", "(direct)", "FR", 2),
        ev(site_id, "e5", "E", "pageview", d(2026, 4, 11, 8, 0), "/c", "Google", "DE"),
        ev(site_id, "e5", "E", "pageview", d(2026, 4, 11, 8, 5), "/d", "(direct)", "DE"),
        ev(site_id, "e6", "F", "pageview", d(2026, 4, 10, 10, 0), "/a", "(direct)", "DE"),
        ev(site_id, "e2", "B", "pageview", d(2026, 4, 14, 21, 50), "/x", "Google", "DE"),
        ev(site_id, "e2", "B", "pageview", d(2026, 4, 15, 10, 0), "/y", "Mastodon", "CH"),
        ev(site_id, "e2", "B", "pageview", d(2026, 4, 15, 22, 5), "/w", "(direct)", "CH"),
        ev(site_id, "e7", "G", "pageview", d(2026, 4, 20, 21, 50), "/m", "Google", "DE"),
        ev(site_id, "e7", "G", "pageview", d(2026, 4, 20, 22, 0), "/n", "(direct)", "AT"),
        ev(other_id, "o1", "Z", "pageview", d(2026, 4, 11, 8, 0), "/c", "Bing", "AT"),
    ]


@pytest.fixture
def site(app, make_site):
    return site_with_events(app, make_site, "e.example", dataset)


@pytest.fixture
def tool(app, site) -> Callable[..., dict[str, Any]]:
    """Call a tool through the MCP endpoint with the server key; its structuredContent."""
    client = app.test_client()

    def call(name: str, period: dict[str, str], **arguments: Any) -> dict[str, Any]:
        result = tool_result(client, site.server_headers(), name, {**period, **arguments})
        assert result["isError"] is False, result["content"]
        return result["structuredContent"]

    return call


def test_the_day_a_visit_ends_after_and_the_day_it_started_before(tool):
    first = tool("query", DAY1, metrics=ALL)
    assert first["totals"] == [5, 5, 6, 6, 80.0, 1.2, 180]
    assert first["estimated"] is True  # E4 weighs 2
    second = tool("query", DAY2, metrics=ALL)
    assert second["totals"] == [4, 4, 6, 8, 50.0, 1.5, 225]


def test_a_visit_crossing_the_end_is_its_events_before_it(tool):
    # E1 alone on the 10th: the only visit leaving /b
    alone = tool("query", DAY1, metrics=ALL, filters=[["is", "visit:exit_page", ["/b"]]])
    # visitor A, 1 visit, /a and /b, no bounce, 2 views per visit, 21:40-21:55
    assert alone["totals"] == [1, 1, 2, 2, 0.0, 2.0, 900]
    # exits: /b (E1, not its last page /d); /a: E3 1 + E4 2 + E6 1
    assert rows(tool("query", DAY1, metrics=["visits"], dimensions=["visit:exit_page"])) == [
        ("/a", 4), ("/b", 1)]
    # sources: Google E1 1 + E4 2; (direct) E6; Hacker News E3 (E1 is not Bing here)
    assert rows(tool("query", DAY1, metrics=["visits"], dimensions=["visit:source"])) == [
        ("Google", 3), ("(direct)", 1), ("Hacker News", 1)]


def test_the_next_day_a_visit_started_before_is_its_events_there(tool):
    # E1 on the 11th: its 00:10 page view (/c, Bing, AT) is its entry, 00:20 (/d) its exit
    alone = tool("query", DAY2, metrics=ALL, filters=[["is", "visit:source", ["Bing"]]])
    assert alone["totals"] == [1, 1, 2, 2, 0.0, 2.0, 600]
    assert rows(tool("query", DAY2, metrics=["visits"], dimensions=["visit:country"])) == [
        ("FR", 2), ("AT", 1), ("DE", 1)]  # E4 (w2), E1, E5
    assert rows(tool("query", DAY2, metrics=["visits"], dimensions=["visit:source"])) == [
        ("(direct)", 2), ("Bing", 1), ("Google", 1)]  # E4 (w2), E1, E5
    assert rows(tool("query", DAY2, metrics=["visits"], dimensions=["visit:entry_page"])) == [
        ("/c", 2), ("/e", 2)]  # E1 + E5; E4 (w2)
    assert rows(tool("query", DAY2, metrics=["visits", "pageviews"],
                     dimensions=["visit:exit_page"])) == [
        ("/d", 2, 4), ("/e", 2, 2)]  # E1 + E5, 2 page views each; E4's one, w2


def test_a_visit_crossing_both_edges_of_a_day(tool):
    result = tool("query", DAY15, metrics=ALL)
    # E2's /y alone: 1 page view, 1 event, a bounce, 0 s
    assert result["totals"] == [1, 1, 1, 1, 100.0, 1.0, 0]
    assert result["estimated"] is False
    for dimension, value in (("visit:entry_page", "/y"), ("visit:exit_page", "/y"),
                             ("visit:source", "Mastodon"), ("visit:country", "CH")):
        assert rows(tool("query", DAY15, metrics=["visits"], dimensions=[dimension])) == [
            (value, 1)]
    # over 14-16 April the whole visit is inside: /x to /w, 21:50 on the 14th to 22:05 on
    # the 15th (UTC) = 24 h 15 min = 87,300 s, Google
    whole = tool("query", {"from": "2026-04-14", "to": "2026-04-16"}, metrics=ALL,
                 dimensions=["visit:source", "visit:entry_page", "visit:exit_page"])
    assert rows(whole) == [("Google", "/x", "/w", 1, 1, 3, 3, 0.0, 3.0, 87300)]


def test_a_visit_ending_on_the_next_days_first_instant(tool):
    # E7: on the 20th /m alone (its 22:00 UTC page view is the 21st's), a bounce of 0 s; on
    # the 21st /n alone, from (direct), AT
    for day, page, source, country in (("2026-04-20", "/m", "Google", "DE"),
                                       ("2026-04-21", "/n", "(direct)", "AT")):
        period = {"from": day, "to": day}
        assert tool("query", period, metrics=ALL)["totals"] == [1, 1, 1, 1, 100.0, 1.0, 0]
        result = tool("query", period, metrics=["visits"],
                      dimensions=["visit:entry_page", "visit:exit_page", "visit:source"],
                      filters=[["is", "visit:country", [country]]])
        assert rows(result) == [(page, page, source, 1)]


def test_a_visit_with_no_page_view_in_the_period_is_not_one_there_but_its_events_count(tool):
    # E3 on the 11th: its heartbeat and goal only
    result = tool("query", DAY2, metrics=["visitors", "visits", "events"],
                  filters=[["is", "event:type", ["heartbeat", "goal"]]])
    assert result["totals"] == [0, 0, 2]
    by_type = tool("query", DAY2, metrics=["events", "visits"], dimensions=["event:type"])
    # page views: E1 2, E4 2 (w2), E5 2; visits with one: E1, E4 (w2), E5
    assert rows(by_type) == [("pageview", 6, 4), ("goal", 1, 0), ("heartbeat", 1, 0)]
    # nor is C a visitor; nor does its goal convert a visit of the 11th
    goals = tool("query", DAY2, metrics=["visits", "conversion_rate"],
                 dimensions=["event:goal"])
    assert rows(goals) == [("Signup", 0, 0.0)]


def test_a_weighted_crossing_visit(tool):
    # E4 (w2) on the 11th: /e alone, FR; and on the 10th: /a alone, FR
    for period, page in ((DAY2, "/e"), (DAY1, "/a")):
        result = tool("query", period, metrics=ALL,
                      filters=[["is", "visit:country", ["FR"]]])
        assert result["totals"] == [2, 2, 2, 2, 100.0, 1.0, 0]
        assert result["estimated"] is True
        assert rows(tool("query", period, metrics=["visitors"],
                         dimensions=["visit:entry_page"],
                         filters=[["is", "visit:country", ["FR"]]])) == [(page, 2)]


def test_compare_a_visit_in_both_periods(tool):
    result = tool("query", DAY2, metrics=["visitors", "visits", "pageviews", "bounce_rate",
                                          "visit_duration"],
                  dimensions=["visit:source"], compare="previous_period")
    assert result["totals"] == [4, 4, 6, 50.0, 225]
    assert result["comparison"] == {"from": "2026-04-10", "to": "2026-04-10",
                                    "totals": [5, 5, 6, 80.0, 180]}
    assert [(row["dimensions"], row["metrics"], row["comparison"])
            for row in result["results"]] == [
        # E4 (w2); before: E6, a bounce of 0 s (0 s before: no change to give)
        (["(direct)"], [2, 2, 2, 100.0, 0],
         {"metrics": [1, 1, 1, 100.0, 0], "change": [100.0, 100.0, 100.0, 0.0, None]}),
        # E1 on the 11th; on the 10th it was Google
        (["Bing"], [1, 1, 2, 0.0, 600],
         {"metrics": [0, 0, 0, None, None], "change": [None, None, None, None, None]}),
        # E5; before: E1 (A, /a /b, 900 s) and E4 (D w2, /a, a bounce): visitors 3, visits
        # 3, page views 2+2 = 4, bounce 2/3 = 66.7, duration 900/3 = 300
        (["Google"], [1, 1, 2, 0.0, 300],
         {"metrics": [3, 3, 4, 66.7, 300], "change": [-66.7, -66.7, -50.0, -66.7, 0.0]}),
    ]


def test_funnel_filters_by_the_visit_values_in_the_period(tool):
    def counts(period: dict[str, str], steps: list[str], source: str) -> list[int]:
        result = tool("funnel", period, steps=[{"page": page} for page in steps],
                      filters=[["is", "visit:source", [source]]])
        return [step["count"] for step in result["steps"]]

    # the 11th: E1 enters from Bing there (Google on the 10th), E5 from Google; both /c, /d
    assert counts(DAY2, ["/c", "/d"], "Bing") == [1, 1]
    assert counts(DAY2, ["/c", "/d"], "Google") == [1, 1]
    # the 10th: Google is E1 (/a, /b) and E4 (w2, /a only); /c and /d are not in it
    assert counts(DAY1, ["/a", "/b"], "Google") == [3, 1]
    assert counts(DAY1, ["/b", "/c"], "Google") == [1, 0]
    # the 15th: E2 is Mastodon there; its /x (the 14th) is not in the period
    assert counts(DAY15, ["/y", "/w"], "Mastodon") == [1, 0]
    assert counts(DAY15, ["/y", "/w"], "Google") == [0, 0]
    # E3's goal on the 11th: no visit there (no page view), but its visitor C has the goal
    steps = [{"goal": "Signup"}, {"page": "/c"}]
    assert [step["count"] for step in tool("funnel", DAY2, steps=steps)["steps"]] == [0, 0]
    assert [step["count"] for step in
            tool("funnel", DAY2, steps=steps, unit="visitor")["steps"]] == [1, 0]


def test_time_day_buckets_a_crossing_visit_on_its_first_day_in_the_period(tool):
    # 11-12 April: E1 and E4 started on the 10th but count on the 11th; E5 too; E3's
    # heartbeat and goal are events only
    result = tool("query", {"from": "2026-04-11", "to": "2026-04-12"},
                  metrics=["visits", "pageviews", "events"], dimensions=["time:day"])
    assert rows(result) == [("2026-04-11", 4, 6, 8)]
    # with an event filter (the events summed per day and visit): /c's page views, E1's
    # and E5's, both on the 11th
    result = tool("query", {"from": "2026-04-11", "to": "2026-04-12"},
                  metrics=["visits", "pageviews"], dimensions=["time:day"],
                  filters=[["is", "event:page", ["/c"]]])
    assert rows(result) == [("2026-04-11", 2, 2)]
    # 15-16 April: E2 started on the 14th; /y on the 15th, /w on the 16th (00:05 local):
    # the visit counts on the 15th, 10:00-22:05 UTC = 43,500 s; the 16th has a page view only
    result = tool("query", {"from": "2026-04-15", "to": "2026-04-16"},
                  metrics=["visits", "pageviews", "visit_duration"], dimensions=["time:day"])
    assert rows(result) == [("2026-04-15", 1, 1, 43500), ("2026-04-16", 0, 1, None)]
    assert result["totals"] == [1, 2, 43500]
    # hours: E1's 00:10 and 00:20 page views and E4's 00:03 are in the 11th's 00:00 hour,
    # E5's at 10:00 and 10:05 in the 10:00 one
    hourly = tool("query", DAY2, metrics=["visits", "pageviews"], dimensions=["time:hour"])
    assert rows(hourly) == [("2026-04-11T00:00", 3, 4), ("2026-04-11T10:00", 1, 2)]
