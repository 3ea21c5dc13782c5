"""The bounds of `filters` (app.analytics.filters): 100 conditions and 1,000 values in all,
answered on both databases (100 or-ed conditions are one statement on SQLite too), nested at
most 5 levels; past them a tool error naming the limits.

The site f.example (UTC) on 2026-03-01, one page view each unless said:
  s1 visitor A: /a (Google, DE), then /b          s2 visitor B: /b (Bing, FR)
  s3 visitor C: /c ((direct), DE)                 s4 visitor C: /docs/x (Google, no country)
and another site's page view of /a. By hand: event:page /a or /b selects s1 (both its pages)
and s2: 2 visits, 2 visitors, 3 page views; visit:source Google or Bing: s1, s2, s4, 3 visits
of 4 page views; /a or /c: s1 and s3, 2 visitors, 2 page views; a page containing "/doc": s4 alone.
"""
from datetime import datetime
from typing import Any

import pytest

from app.analytics.filters import MAX_DEPTH
from tests.fixtures.helpers import site_with_events, tool_result

PERIOD = {"from": "2026-03-01", "to": "2026-03-01"}
COLUMNS = ("batch_id", "user_id", "name", "page_title", "referrer", "properties", "client_ts",
           "sent_ts", "device", "browser", "browser_version", "os", "os_version", "language",
           "screen", "channel", "referrer_url", "utm_source", "utm_medium", "utm_campaign",
           "utm_content", "utm_term")
TOO_MANY = ("`filters` may hold at most 100 conditions and 1,000 values in all; this one has "
            "more than {}.")


def pageview(site_id: int, session: str, visitor: str, path: str, minute: int,
             source: str | None = None, country: str | None = None) -> dict[str, Any]:
    at = datetime(2026, 3, 1, 10, minute)
    return {**dict.fromkeys(COLUMNS), "site_id": site_id, "session_id": session,
            "anonymous_id": visitor, "type": "pageview", "page_url": f"https://f.example{path}",
            "occurred_at": at, "received_at": at, "weight": 1.0, "path": path,
            "hostname": "f.example", "source": source, "country": country}


def rows(site_id: int, other_id: int) -> list[dict[str, Any]]:
    return [pageview(site_id, "s1", "A", "/a", 0, "Google", "DE"),
            pageview(site_id, "s1", "A", "/b", 1),
            pageview(site_id, "s2", "B", "/b", 2, "Bing", "FR"),
            pageview(site_id, "s3", "C", "/c", 3, "(direct)", "DE"),
            pageview(site_id, "s4", "C", "/docs/x", 4, "Google"),
            pageview(other_id, "o1", "Z", "/a", 5, "Google", "DE")]


@pytest.fixture
def tool(app, make_site):
    site = site_with_events(app, make_site, "f.example", rows, timezone="UTC")
    client = app.test_client()
    return lambda name, **arguments: tool_result(client, site.server_headers(), name,
                                                 {**PERIOD, **arguments})


@pytest.fixture
def figures(tool):
    """[visits, visitors, pageviews] of `query` under `filters`."""

    def ask(filters: list[Any]) -> list[int]:
        result = tool("query", metrics=["visits", "visitors", "pageviews"], filters=filters)
        assert result["isError"] is False, result["content"]
        return result["structuredContent"]["totals"]

    return ask


def decoys(count: int, prefix: str = "/none-") -> list[str]:
    return [f"{prefix}{n}" for n in range(count)]


def any_of(op: str, dimension: str, values: list[str]) -> list[Any]:
    """["or", [[op, dimension, [value]] for each value]]: one condition per value."""
    return ["or", [[op, dimension, [value]] for value in values]]


def test_100_or_ed_conditions_are_answered_as_one_list(figures):
    pages = [*decoys(98), "/a", "/b"]
    assert figures([["is", "event:page", pages]]) == [2, 2, 3]
    assert figures([any_of("is", "event:page", pages)]) == [2, 2, 3]
    sources = [*decoys(98), "Google", "Bing"]
    assert figures([any_of("is", "visit:source", sources)]) == [3, 3, 4]
    assert figures([any_of("contains", "event:page", [*decoys(99, "/x-"), "/doc"])]) == [1, 1, 1]
    none_of = ["and", [["is_not", "event:page", [page]] for page in pages]]
    assert figures([["not", none_of]]) == [2, 2, 3]


def test_1000_values_are_answered(figures):
    assert figures([["is", "event:page", [*decoys(998), "/a", "/c"]]]) == [2, 2, 2]
    assert figures([["contains", "event:page", [*decoys(999, "/y-"), "/doc"]]]) == [1, 1, 1]
    assert figures([["matches", "event:page", [*decoys(999, "/z-*"), "/docs/**"]]]) == [1, 1, 1]
    # split among 100 conditions of 10 values each
    split = [*decoys(998), "/a", "/b"]
    assert figures([["or", [["is", "event:page", split[n:n + 10]]
                            for n in range(0, 1000, 10)]]]) == [2, 2, 3]


def test_past_100_conditions_or_1000_values_a_tool_error(tool, figures):
    assert figures([any_of("is", "event:page", [*decoys(98), "/a", "/b"])]) == [2, 2, 3]
    for filters, over in (
            ([any_of("is", "event:page", [*decoys(99), "/a", "/b"])], "100 conditions"),
            ([["is", "visit:source", ["Google"]]] * 101, "100 conditions"),
            ([["is", "event:page", [*decoys(999), "/a", "/b"]]], "1,000 values"),
            ([["is", "event:page", decoys(500)], ["is_not", "event:page", decoys(501)]],
             "1,000 values")):
        result = tool("query", metrics=["visits"], filters=filters)
        assert result == {"isError": True, "content": [
            {"type": "text", "text": TOO_MANY.format(over)}]}


def test_funnel_filters_have_the_same_bounds(tool):
    steps = [{"page": "/a"}, {"page": "/b"}]
    sources = [*decoys(99), "Google"]
    result = tool("funnel", steps=steps, filters=[any_of("is", "visit:source", sources)])
    assert result["isError"] is False, result["content"]
    assert [step["count"] for step in result["structuredContent"]["steps"]] == [1, 1]
    result = tool("funnel", steps=steps,
                  filters=[any_of("is", "visit:source", [*sources, "Bing"])])
    assert result["content"][0]["text"] == TOO_MANY.format("100 conditions")


def nested(depth: int, innermost: list[Any]) -> list[Any]:
    """`innermost` under depth - 1 levels of ["not", ["not", ...]] (an even count keeps it)."""
    for _ in range(depth - 1):
        innermost = ["not", innermost]
    return innermost


def test_the_deepest_nesting_with_the_most_values_is_answered(tool, figures):
    """Five levels, the innermost condition with 1,000 values; then within a comparison, three
    dimensions and `percentage` (the filters rendered in each of their statements)."""
    leaf = ["contains", "event:page", [*decoys(999, "/w-"), "/doc"]]
    assert figures([nested(MAX_DEPTH, leaf)]) == [1, 1, 1]
    # five levels again, under an "or" with a visit condition: 900 and 100 values
    padded = ["and", [nested(MAX_DEPTH - 2, ["contains", "event:page",
                                              [*decoys(899, "/w-"), "/doc"]])]]
    result = tool("query", metrics=["visits", "bounce_rate", "percentage"],
                  dimensions=["time:hour", "event:page", "visit:country"],
                  filters=[["or", [padded, ["is", "visit:source", [*decoys(99), "Bing"]]]]],
                  compare="previous_period")
    assert result["isError"] is False, result["content"]
    assert sorted((row["dimensions"], row["metrics"])
                  for row in result["structuredContent"]["results"]) == [
        (["2026-03-01T10:00", "/b", "FR"], [1, 100.0, 50.0]),
        (["2026-03-01T10:00", "/docs/x", None], [1, 100.0, 50.0])]
    too_deep = tool("query", metrics=["visits"], filters=[nested(MAX_DEPTH + 1, leaf)])
    assert too_deep["content"][0]["text"] == "`filters` nest deeper than 5 levels; flatten them."
