"""The `query` tool against a small hand-built site whose every figure is worked out below.

The site is in Europe/Berlin; the period is 28-29 March 2026 (local), which holds the spring
DST change (29 March, 02:00 CET -> 03:00 CEST): it runs from 2026-03-27 23:00 UTC to
2026-03-29 22:00 UTC. Sessions (w = sampling weight):
  S1 A w1  28th 08:00 pv /  (Google, DE, Mobile, Chrome, utm spring/google/cpc)
           08:01 pv /pricing (second page view: own-site referrer, (direct))
           08:02 goal Signup, 08:05 custom Download {plan: pro}      duration 300 s
  S2 A w1  29th 10:00 pv /blog/hello ((direct), DE, Desktop, Firefox) bounce, 0 s
  S3 B w2  28th 12:00 pv /pricing, 12:00:30 scroll (/pricing), 12:01 pv /docs/start,
           12:02 click (/docs/start, property "x'); DROP TABLE event; --": "1")
           (Google, FR, Mobile, Safari)                              duration 120 s
  S4 C w1  27th 22:50 pv / (23:50 local on the 27th: before the period; Hacker News)
           27th 23:10 pv /pricing (00:10 local on the 28th, (direct), no country, Tablet)
           27th 23:11 goal Signup                                    in period: 60 s
  S5 D w1  29th 00:30 pv / (01:30 CET), 01:30 pv /pricing (03:30 CEST), 01:31 custom
           Download {plan: free} (Bing, DE, Desktop, Chrome, utm spring)   3660 s
  no session, visitor A: 29th 15:00 goal Signup (a backend's; no page)
  S7 E w1  28th 09:00 heartbeat only (page_url ...?x=1, path / as ingest stores it): no visit
  S6 B     29th 22:00 pv (00:00 on the 30th: after the period)
  S8 A w1  26th 10:00 pv /pricing (Google, DE): the previous period (26-27 March)
  another site's page view inside the period.
In the period: visits S1-S5 weigh 1+1+2+1+1 = 6; visitors A, B(2), C, D = 5; events
4+1+8+2+3+1+1 = 20; page views 2+1+4+1+2 = 10.
"""
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from app.rollups import merging as rollups
from models import Event, database
from tests.fixtures import query as query_data
from tests.fixtures.query import (
    FROM,
    PERIOD,
    S1,
    SQL_KEY,
    TO,
    ev,
    rows,
)

site, tool = query_data.site, query_data.tool  # fixtures shared with tests/agent/

@pytest.fixture
def query(tool) -> Callable[..., dict[str, Any]]:
    def run(**arguments: Any) -> dict[str, Any]:
        result = tool("query", **{**PERIOD, **arguments})
        assert result["isError"] is False, result["content"]
        return result["structuredContent"]

    return run


def error_of(tool: Callable[..., dict[str, Any]], **arguments: Any) -> str:
    result = tool("query", **{**PERIOD, **arguments})
    assert result["isError"] is True, result
    return result["content"][0]["text"]


def test_every_metric_without_dimensions(query):
    result = query(metrics=["visitors", "visits", "pageviews", "events", "bounce_rate",
                            "views_per_visit", "visit_duration"])
    assert result["site"] == "q.example" and result["timezone"] == "Europe/Berlin"
    assert (result["from"], result["to"]) == (FROM, TO)
    # visitors A1 B2 C1 D1; visits 1+1+2+1+1; 10 page views; 20 events; S2 bounces: 1/6;
    # page views per visit (2+1+2*2+1+2)/6; duration (300+0+2*120+60+3660)/6 = 710.
    assert rows(result) == [(5, 6, 10, 20, 16.7, 1.67, 710)]
    assert result["totals"] == [5, 6, 10, 20, 16.7, 1.67, 710]
    assert result["total_rows"] == 1 and result["estimated"] is True
    assert result["warnings"] == []


@pytest.mark.parametrize(("dimension", "expected"), [
    # visits per value (S1 1, S2 1, S3 2, S4 1, S5 1), most first, ties by value, null last
    ("visit:country", [("DE", 3), ("FR", 2), (None, 1)]),
    ("visit:device", [("Mobile", 3), ("Desktop", 2), ("Tablet", 1)]),
    ("visit:browser", [("Chrome", 3), ("Safari", 2), ("Firefox", 1)]),
    ("visit:browser_version", [("131", 2), ("18", 2), ("130", 1), ("133", 1)]),
    ("visit:os", [("Android", 2), ("iOS", 2), ("Linux", 1), ("Windows", 1)]),
    ("visit:os_version", [("18", 2), ("10", 1), ("13", 1), ("14", 1), (None, 1)]),
    ("visit:language", [("de", 3), ("fr", 2), ("en", 1)]),
    ("visit:screen", [("small", 3), ("large", 1), ("medium", 1), ("xlarge", 1)]),
    # the first page view in the period decides: S4's is /pricing, (direct)
    ("visit:source", [("Google", 3), ("(direct)", 2), ("Bing", 1)]),
    ("visit:channel", [("Organic Search", 4), ("Direct", 2)]),
    ("visit:referrer", [("https://www.google.fr/", 2), (None, 2),
                        ("https://www.bing.com/search", 1), ("https://www.google.com/", 1)]),
    ("visit:utm_source", [(None, 5), ("google", 1)]),
    ("visit:utm_medium", [(None, 5), ("cpc", 1)]),
    ("visit:utm_campaign", [(None, 4), ("spring", 2)]),
    ("visit:utm_content", [(None, 5), ("banner", 1)]),
    ("visit:utm_term", [(None, 5), ("analytics", 1)]),
    ("visit:entry_page", [("/pricing", 3), ("/", 2), ("/blog/hello", 1)]),
    ("visit:exit_page", [("/pricing", 3), ("/docs/start", 2), ("/blog/hello", 1)]),
])
def test_visit_dimensions(query, dimension, expected):
    result = query(metrics=["visits"], dimensions=[dimension])
    assert rows(result) == expected
    assert result["totals"] == [6] and result["total_rows"] == len(expected)


def test_visit_dimension_with_every_metric(query):
    result = query(metrics=["visitors", "visits", "pageviews", "events", "bounce_rate",
                            "views_per_visit", "visit_duration", "percentage"],
                   dimensions=["visit:country"])
    assert rows(result) == [
        # DE: S1, S2, S5 (visitors A, D); page views 2+1+2; events 4+1+3; S2 bounces 1/3;
        # 5/3 views; (300+0+3660)/3 = 1320 s; 2 of 5 visitors
        ("DE", 2, 3, 5, 8, 33.3, 1.67, 1320, 40.0),
        # FR: S3 (w2): 2 page views and 4 events, each weighing 2; 120 s
        ("FR", 2, 2, 4, 8, 0.0, 2.0, 120, 40.0),
        # no country: S4, /pricing and the goal; 60 s
        (None, 1, 1, 1, 2, 0.0, 1.0, 60, 20.0),
    ]
    assert result["totals"] == [5, 6, 10, 20, 16.7, 1.67, 710, None]


def test_event_page_splits_events_and_counts_visits_with_one(query):
    result = query(metrics=["visitors", "visits", "pageviews", "events"],
                   dimensions=["event:page"])
    assert rows(result) == [
        # /pricing: S1 pv, goal, custom; S3 pv, scroll (w2); S4 pv, goal; S5 pv, custom
        ("/pricing", 5, 5, 5, 11),
        # /: S1 pv, S5 pv, S7's heartbeat (S7 is no visit)
        ("/", 2, 2, 2, 3),
        ("/docs/start", 2, 2, 2, 4),  # S3's page view and click, w2
        ("/blog/hello", 1, 1, 1, 1),
        (None, 0, 0, 0, 1),  # the backend's goal without a page
    ]
    assert result["totals"] == [5, 6, 10, 20]


@pytest.mark.parametrize(("dimension", "expected"), [
    ("event:hostname", [("q.example", 19), (None, 1)]),
    ("event:type", [("pageview", 10), ("goal", 3), ("click", 2), ("custom", 2),
                    ("scroll", 2), ("heartbeat", 1)]),
    ("event:name", [(None, 15), ("Signup", 3), ("Download", 2)]),
    ("event:goal", [("Signup", 3)]),  # goal events only: S1, S4, the backend's
    ("event:props:plan", [(None, 18), ("free", 1), ("pro", 1)]),
    (f"event:props:{SQL_KEY}", [(None, 18), ("1", 2)]),  # S3's click, w2
])
def test_event_dimensions(query, dimension, expected):
    assert rows(query(metrics=["events"], dimensions=[dimension])) == expected


def test_time_buckets_are_local_across_dst(query):
    # local days: S4's 23:10 UTC page view is on the 28th; S5's 00:30 UTC on the 29th
    assert rows(query(metrics=["pageviews", "visits", "events"], dimensions=["time:day"])) == [
        ("2026-03-28", 7, 4, 15),  # S1 2, S3 4, S4 1 page views; S1, S3, S4 visits; + S7
        ("2026-03-29", 3, 2, 5),  # S2 1, S5 2; S2, S5; + the backend's goal
    ]
    # S2 and S5: 00:30 UTC is 01:30 CET, 01:30 UTC is 03:30 CEST (02:00 never happened),
    # 10:00 UTC is 12:00 CEST
    hourly = query(metrics=["events"], dimensions=["time:hour"],
                   filters=[["is", "visit:device", ["Desktop"]]])
    assert rows(hourly) == [("2026-03-29T01:00", 1), ("2026-03-29T03:00", 2),
                            ("2026-03-29T12:00", 1)]
    assert rows(query(metrics=["events"], dimensions=["time:week"])) == [("2026-03-23", 20)]
    assert rows(query(metrics=["events"], dimensions=["time:month"])) == [("2026-03", 20)]


@pytest.mark.parametrize(("filters", "visits", "pageviews"), [
    ([["is", "visit:country", ["DE"]]], 3, 5),  # S1, S2, S5
    ([["is_not", "visit:country", ["DE"]]], 3, 5),  # S3 (w2) and S4 (no country)
    ([["is", "visit:country", [None]]], 1, 1),  # S4
    ([["contains", "event:page", ["pric"]]], 5, 5),  # S1, S3, S4, S5 have a /pricing event
    ([["contains_not", "event:page", ["pric"]]], 5, 5),  # S1 /, S2, S3 /docs/start, S5 /
    ([["matches", "event:page", ["/*"]]], 5, 7),  # / and /pricing, not deeper paths
    ([["matches", "event:page", ["/**"]]], 6, 10),
    ([["matches_not", "event:page", ["/*"]]], 3, 3),  # S2 /blog/hello, S3 /docs/start
    ([["matches", "event:page", ["/*/start"]]], 2, 2),
    ([["matches", "event:page", ["/docs/**"]]], 2, 2),  # a prefix: S3's page view and click
    ([["matches", "event:page", ["/pricing"]]], 5, 5),  # no `*`: the page itself
    ([["matches", "event:page", ["/PRICING"], {"case_sensitive": False}]], 5, 5),
    ([["matches_not", "event:page", ["/blog/**"]]], 5, 9),  # all but S2's; S7 is no visit
    ([["is", "visit:browser", ["chrome"]]], 0, 0),  # case-sensitive by default
    ([["is", "visit:browser", ["chrome"], {"case_sensitive": False}]], 3, 5),  # S1 S4 S5
    ([["contains", "visit:source", ["GOO"], {"case_sensitive": False}]], 3, 6),  # S1, S3
    ([["matches", "visit:entry_page", ["/PRIC*"], {"case_sensitive": False}]], 3, 5),
    ([["or", [["is", "visit:country", ["FR"]], ["is", "visit:device", ["Tablet"]]]]], 3, 5),
    ([["not", ["is", "visit:device", ["Mobile"]]]], 3, 4),  # S2, S4, S5
    ([["and", [["is", "visit:country", ["DE"]], ["is", "visit:device", ["Desktop"]]]]], 2, 3),
    ([["is", "visit:country", ["DE"]], ["is", "event:type", ["custom"]]], 2, 0),  # S1, S5
    ([["is", "visit:source", ["Google", "Bing"]]], 4, 8),  # S1, S3, S5
    # across both kinds: S3's events (FR, w2) or the custom events of S1 and S5
    ([["or", [["is", "visit:country", ["FR"]], ["is", "event:type", ["custom"]]]]], 4, 4),
])
def test_filters(query, filters, visits, pageviews):
    assert rows(query(metrics=["visits", "pageviews"], filters=filters)) == [(visits,
                                                                              pageviews)]


def test_sql_looking_values_and_keys_are_values(app, query):
    for value in ("'; DROP TABLE event; --", "%", "_", "\\", "*"):
        assert rows(query(metrics=["events"], filters=[["is", "event:page", [value]]])) == [(0,)]
        assert rows(query(metrics=["events"], filters=[["contains", "event:page",
                                                         [value]]])) == [(0,)]
    assert rows(query(metrics=["events"], filters=[["is", f"event:props:{SQL_KEY}",
                                                     ["1"]]])) == [(2,)]
    with app.app_context(), database.connection_context():
        assert Event.select().count() == 20


def test_the_totals_of_a_goal_breakdown_count_the_goals(query):
    """What a goal breakdown's totals say, as in Plausible: the conversions. Goal events: S1's
    Signup (visitor A), S4's (C), the backend's (A, no session)."""
    result = query(metrics=["visitors", "visits", "events", "pageviews"],
                   dimensions=["event:goal"])
    assert rows(result) == [("Signup", 2, 2, 3, 0)]
    assert result["totals"] == [2, 2, 3, 0]
    by_device = query(metrics=["visits", "events"], dimensions=["event:goal", "visit:device"])
    assert rows(by_device) == [("Signup", "Mobile", 1, 1), ("Signup", "Tablet", 1, 1)]
    assert by_device["totals"] == [2, 3]  # the backend's goal has no visit, hence no device
    # by event:name every event is in a row (the unnamed ones in its null row): the totals
    # are the period's, the sum of the rows
    named = query(metrics=["events"], dimensions=["event:name"])
    assert sum(row["metrics"][0] for row in named["results"]) == named["totals"][0] == 20
    compared = query(metrics=["events"], dimensions=["event:goal"], compare="previous_period")
    assert compared["totals"] == [3] and compared["comparison"]["totals"] == [0]


def test_conversion_rate(query):
    result = query(metrics=["visits", "events", "conversion_rate"], dimensions=["event:goal"])
    # visits with a Signup: S1, S4 of 6; the backend's goal is an event but no visit
    assert rows(result) == [("Signup", 2, 3, 33.3)]
    # the totals are the goals' (the split's events), not all 20 events of the 6 visits
    assert result["totals"] == [2, 3, 33.3]
    by_source = query(metrics=["visits", "conversion_rate"],
                      dimensions=["visit:source", "event:goal"])
    # Google: S1 converts of S1 + S3 (w2) = 1/3; (direct): S4 of S2 + S4 = 1/2
    assert rows(by_source) == [("(direct)", "Signup", 1, 50.0),
                               ("Google", "Signup", 1, 33.3)]
    filtered = query(metrics=["visits", "conversion_rate"], dimensions=["visit:device"],
                     filters=[["is", "event:goal", ["Signup"]]])
    # Mobile: S1 of S1 + S3 = 1/3; Tablet: S4 of S4; totals 2 of 6
    assert rows(filtered) == [("Mobile", 1, 33.3), ("Tablet", 1, 100.0)]
    assert filtered["totals"] == [2, 33.3]


def test_compare_with_the_previous_period(query):
    result = query(metrics=["visitors", "pageviews", "bounce_rate"],
                   dimensions=["visit:source"], compare="previous_period")
    assert result["comparison"] == {"from": "2026-03-26", "to": "2026-03-27",
                                    # S8 (A, Google) and S4's 22:50 page view (C, Hacker
                                    # News): one page view each, both bounce
                                    "totals": [2, 2, 100.0]}
    assert result["totals"] == [5, 10, 16.7]
    assert [(row["dimensions"], row["metrics"], row["comparison"])
            for row in result["results"]] == [
        # Google: A, B(2); 2 + 4 page views; no bounce. Before: S8 only, which bounced.
        (["Google"], [3, 6, 0.0], {"metrics": [1, 1, 100.0], "change": [200.0, 500.0, -100.0]}),
        # (direct): S2 bounces, S4 does not
        (["(direct)"], [2, 2, 50.0], {"metrics": [0, 0, None], "change": [None, None, None]}),
        (["Bing"], [1, 2, 0.0], {"metrics": [0, 0, None], "change": [None, None, None]}),
    ]


def test_compare_matches_time_buckets(query):
    result = query(metrics=["pageviews"], dimensions=["time:day"],
                   compare={"from": "2026-03-26", "to": "2026-03-27"})
    # the 26th (S8) lines up with the 28th, the 27th (S4 at 23:50 local) with the 29th
    assert [(row["dimensions"], row["metrics"], row["comparison"]["metrics"],
             row["comparison"]["change"]) for row in result["results"]] == [
        (["2026-03-28"], [7], [1], [600.0]), (["2026-03-29"], [3], [1], [200.0])]


def test_order_limit_offset_and_total_rows(query):
    base = {"metrics": ["visitors"], "dimensions": ["event:page"]}
    # visitors: /pricing 5, / 2, /docs/start 2, /blog/hello 1, no page 0
    page = query(**base, limit=2, offset=1)
    assert rows(page) == [("/", 2), ("/docs/start", 2)] and page["total_rows"] == 5
    assert page["totals"] == [5]
    assert rows(query(**base, order_by=[["visitors", "asc"], ["event:page", "desc"]])) == [
        (None, 0), ("/blog/hello", 1), ("/docs/start", 2), ("/", 2), ("/pricing", 5)]
    assert rows(query(**base, order_by=[["event:page", "asc"]], offset=4)) == [(None, 0)]


@pytest.mark.parametrize(("arguments", "sentence"), [
    ({"metrics": ["visit"]}, "Unknown metric 'visit'. Did you mean 'visits'? Valid metrics: "
                             "visitors, visits, pageviews, events, bounce_rate, "
                             "views_per_visit, visit_duration, conversion_rate, percentage, "
                             "total_revenue, orders, average_revenue."),
    ({"metrics": ["visits"], "dimensions": ["visit:contry"]},
     "Unknown dimension 'visit:contry'. Did you mean 'visit:country'? Valid dimensions: "
     "event:page, event:hostname, "),
    ({"metrics": ["visits"], "filters": [["contain", "visit:country", ["DE"]]]},
     "Unknown filter operator 'contain'. Did you mean 'contains'? Valid filter operators: is, "
     "is_not, contains, contains_not, matches, matches_not, and, or, not, has_done, "
     "has_not_done."),
    ({"metrics": ["visits"], "filters": [["is", "visit:country", "DE"]]},
     "Invalid filter ['is', 'visit:country', 'DE']: a filter is [op, dimension, "),
    ({"metrics": ["visits"], "filters": [["is", "time:day", ["2026-03-28"]]]},
     "Invalid filter ['is', 'time:day', ['2026-03-28']]: time dimensions cannot be filtered"),
    ({"metrics": ["visits"], "limit": 0}, "`limit` must be an integer from 1 to 1000."),
    ({"metrics": ["visits"], "limit": "5"}, "`limit` must be an integer from 1 to 1000."),
    ({"metrics": ["percentage"]},
     "Metric 'percentage' needs a dimension: add one to `dimensions`."),
    ({"metrics": ["conversion_rate"]}, "Metric 'conversion_rate' needs 'event:goal' in "
                                       "`dimensions` or an [\"is\", \"event:goal\", [...]] "
                                       "filter."),
    ({"metrics": ["visits"], "order_by": [["visitor", "desc"]]},
     "Unknown order_by name 'visitor'. Did you mean 'visits'? Valid order_by names: visits."),
    ({"metric": ["visits"]}, "Unknown argument 'metric' of query. Did you mean 'metrics'? "
                             "Valid arguments: metrics, dimensions, filters, compare, "
                             "order_by, limit, offset, currency, from, to, period."),
    ({"metrics": ["visits"], "period": "30days"}, "Unknown period '30days'. Did you mean "
                                                  "'30d'?"),
    ({"metrics": ["visits"], "compare": "last_year"}, "Invalid compare 'last_year': give "
                                                      "'previous_period', 'year_over_year'"),
    ({"metrics": ["visits"], "to": "29.03.2026"},
     "Invalid to '29.03.2026': give a date as YYYY-MM-DD."),
])
def test_bad_arguments_are_one_sentence(tool, arguments, sentence):
    result = tool("query", **arguments)
    assert result["isError"] is True, result
    assert result["content"][0]["text"].startswith(sentence)


def test_the_time_limit_turns_into_a_tool_error(make_app, site):
    app = make_app(AGENT_QUERY_SECONDS=0.001)
    filler = [ev(site.site.id, f"f{number}", f"v{number}", "pageview",
                 datetime(2026, 3, 28, 12, 0, number % 60), "/x", context=S1)
              for number in range(30_000)]
    with app.app_context(), database.connection_context(), database.atomic():
        for start in range(0, len(filler), 1000):
            Event.insert_many(filler[start:start + 1000]).execute()
        rollups.rebuild()
    response = app.test_client().post("/api/mcp", headers=site.server_headers(), json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "query",
        "arguments": {**PERIOD, "metrics": ["visitors", "bounce_rate"],
                      "dimensions": ["visit:source", "event:page"]}}})
    result = response.get_json()["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"] == (
        "The query ran longer than 0.001 s and was stopped. Narrow it: a shorter period, "
        "fewer dimensions (time:day rather than time:hour), or filters.")


def test_the_kept_tools_take_period_too(tool):
    result = tool("get_overview", period="7d")
    assert result["isError"] is False
    assert result["structuredContent"]["timezone"] == "Europe/Berlin"
