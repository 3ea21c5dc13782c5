"""`has_done` / `has_not_done` in `filters` (query, funnel), on the shop of
tests/analytics/shop.py, whose visits are worked out there:

  s1 A: / , /pricing, goal Signup    s2 B: /pricing, click    s3 B: /
  s4 C: /blog/a, scroll              s5 D: /docs              s6 E: /docs

Visits that saw /pricing: s1, s2 (visitors A, B); their page views by page: / 1 (s1),
/pricing 2 (s1, s2); their events 3 + 2 = 5. The others, s3-s6 (visitors B, C, D, E): / 1,
/blog/a 1, /docs 2. Visits with a Signup goal: s1 (Google). Visits with a click or a view of
/blog/a: s2, s4.
Funnel / then /pricing: s1 and s3 view /, s1 then /pricing: 2, 1; among visits with a Signup: 1, 1.
"""
from typing import Any

import pytest

from tests.fixtures.mcp import sdk_calls

SAW_PRICING = ["has_done", ["is", "event:page", ["/pricing"]]]
NO_PRICING = ["has_not_done", ["is", "event:page", ["/pricing"]]]


def rows(found: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(*row["dimensions"], *row["metrics"]) for row in found["results"]]


def test_other_pages_of_the_visits_that_saw_pricing(ask):
    # without has_done an event:page filter selects the events: /pricing alone
    assert rows(ask("query", metrics=["pageviews"], dimensions=["event:page"],
                    filters=[["is", "event:page", ["/pricing"]]])) == [("/pricing", 2)]
    found = ask("query", metrics=["pageviews", "visits"], dimensions=["event:page"],
                filters=[SAW_PRICING])
    assert rows(found) == [("/pricing", 2, 2), ("/", 1, 1)]
    assert ask("query", metrics=["visitors", "visits", "events"],
               filters=[SAW_PRICING])["totals"] == [2, 2, 5]


def test_the_page_rollup_and_the_events_answer_alike(ask):
    # visitors and page views by page read the visits' page rows, and a has_done on pages their
    # sessions; bounce_rate needs the visits, so that answer reads the events: the same figures
    for done in (SAW_PRICING, NO_PRICING, ["has_done", ["matches", "event:page", ["/blog/**"]]],
                 ["has_done", ["is", "event:goal", ["Signup"]]]):
        rolled = rows(ask("query", metrics=["visitors", "pageviews"], dimensions=["event:page"],
                          filters=[done]))
        read = rows(ask("query", metrics=["visitors", "pageviews", "bounce_rate"],
                        dimensions=["event:page"], filters=[done]))
        assert rolled and rolled == [row[:3] for row in read]
    # the visits with a Signup goal: s1 (/ and /pricing)
    assert rows(ask("query", metrics=["pageviews"], dimensions=["event:page"], filters=[
        ["has_done", ["is", "event:goal", ["Signup"]]]])) == [("/", 1), ("/pricing", 1)]


def test_the_visits_that_did_not(ask):
    found = ask("query", metrics=["pageviews"], dimensions=["event:page"], filters=[NO_PRICING])
    assert rows(found) == [("/docs", 2), ("/", 1), ("/blog/a", 1)]
    assert ask("query", metrics=["visitors", "visits"], filters=[NO_PRICING])["totals"] == [4, 4]
    # the negation of has_done is has_not_done
    assert ask("query", metrics=["visits"], filters=[["not", SAW_PRICING]])["totals"] == [4]


def test_goals_logic_and_visit_dimensions(ask):
    signed_up = ["has_done", ["is", "event:goal", ["Signup"]]]
    assert rows(ask("query", metrics=["visits"], dimensions=["visit:source"],
                    filters=[signed_up])) == [("Google", 1)]
    either = ["has_done", ["or", [["is", "event:page", ["/blog/a"]],
                                  ["is", "event:type", ["click"]]]]]
    assert ask("query", metrics=["visits"], filters=[either])["totals"] == [2]
    # beside a visit:* filter and inside an `or` with one
    assert ask("query", metrics=["visits"], filters=[
        SAW_PRICING, ["is", "visit:source", ["newsletter"]]])["totals"] == [1]
    assert ask("query", metrics=["visits"], filters=[
        ["or", [signed_up, ["is", "visit:source", ["Hacker News"]]]]])["totals"] == [2]
    # by time: the visits that saw /pricing, all in the hour of T0
    assert sum(row["metrics"][0] for row in ask(
        "query", metrics=["visits"], dimensions=["time:hour"],
        filters=[SAW_PRICING])["results"]) == 2


def test_funnel_filters(ask):
    steps = [{"page": "/"}, {"page": "/pricing"}]
    assert [s["count"] for s in ask("funnel", steps=steps)["steps"]] == [2, 1]
    assert [s["count"] for s in ask("funnel", steps=steps, filters=[
        ["has_done", ["is", "event:goal", ["Signup"]]]])["steps"]] == [1, 1]
    assert [s["count"] for s in ask("funnel", steps=steps, filters=[NO_PRICING])["steps"]] \
        == [1, 0]


def test_describe_data_defines_them(ask):
    found = ask("describe_data")
    assert set(found["filters"]) == {"has_done", "has_not_done"}
    assert "at least one event in the period" in found["filters"]["has_done"]


def test_refusals_after_their_valid_variants(shop, ask):
    ask("query", metrics=["visits"], filters=[SAW_PRICING])
    for bad, says in (
            (["has_done", ["is", "visit:country", ["DE"]]], "event:* dimensions only"),
            (["has_done"], "takes one filter"),
            (["has_done", SAW_PRICING], "event:* dimensions only"),
            (["has_done", ["is", "event:pag", ["/"]]], "Did you mean 'event:page'")):
        result = shop.call("query", {**shop.period, "metrics": ["visits"], "filters": [bad]})
        assert result["isError"] is True, (bad, result)
        assert says in result["content"][0]["text"], result


@pytest.mark.slow
def test_has_done_through_the_sdk_client(shop, start_server):
    live = start_server(workers=1)
    answers = sdk_calls(f"{live.url}/api/mcp", shop.server_key, {
        "pages": ("query", {**shop.period, "metrics": ["pageviews"],
                            "dimensions": ["event:page"], "filters": [SAW_PRICING]}),
    })
    assert answers["pages"].is_error is False, answers["pages"].content
    assert rows(answers["pages"].structured_content) == [("/pricing", 2), ("/", 1)]
