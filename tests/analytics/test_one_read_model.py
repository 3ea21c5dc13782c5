"""One read model: every figure that two tools both answer is the same figure under the same
name and unit, and equal to the value worked out by hand in tests/fixtures/shop.py (never by
egis's own code), on PostgreSQL and SQLite. The shop's traffic comes through ingest, over HTTP
(the `shop` and `ask` fixtures, tests/analytics/conftest.py)."""
import orjson
import pytest

from tests.fixtures.shop import (
    BOUNCE_RATE,
    CHANNELS,
    EVENTS,
    EVENTS_BY_TYPE,
    PAGES,
    PAGEVIEWS,
    REVENUE_BY_CHANNEL,
    REVENUE_BY_SOURCE,
    SIGNUP_RATE,
    SOURCES,
    VIEWS_PER_VISIT,
    VISIT_DURATION,
    VISITORS,
    VISITS,
    rows,
)


def test_overview_and_query_state_the_same_figures(ask):
    overview = ask("get_overview")
    names = ["visitors", "visits", "pageviews", "bounce_rate", "visit_duration"]
    wanted = [VISITORS, VISITS, PAGEVIEWS, BOUNCE_RATE, VISIT_DURATION]
    assert [overview[name] for name in names] == wanted
    totals = ask("query", metrics=[*names, "events", "views_per_visit"])
    assert totals["totals"] == [*wanted, EVENTS, VIEWS_PER_VISIT]
    assert rows(totals) == [(*wanted, EVENTS, VIEWS_PER_VISIT)]
    assert overview["events_by_type"] == EVENTS_BY_TYPE
    by_type = ask("query", metrics=["events"], dimensions=["event:type"])
    assert dict(rows(by_type)) == EVENTS_BY_TYPE
    assert ask("describe_data")["events_by_type"] == EVENTS_BY_TYPE
    assert overview["estimated"] is totals["estimated"] is False


def test_revenue_credits_the_sources_and_channels_query_names(ask):
    revenue = ask("get_revenue", limit=10)
    assert revenue["currencies"] == [{
        "currency": "USD", "gross_minor": 1850, "gross": "18.50", "refunds_minor": 200,
        "refunds": "2.00", "net_minor": 1650, "net": "16.50", "orders": 3, "refund_count": 1}]
    assert [(r["source"], r["net_minor"], r["orders"]) for r in revenue["by_source"]] == \
        REVENUE_BY_SOURCE
    assert [(r["channel"], r["net_minor"], r["orders"]) for r in revenue["by_channel"]] == \
        REVENUE_BY_CHANNEL
    sources = ask("query", metrics=["visits", "visitors"], dimensions=["visit:source"],
                   order_by=[["visits", "desc"], ["visit:source", "asc"]])
    assert rows(sources) == SOURCES
    channels = ask("query", metrics=["visits"], dimensions=["visit:channel"],
                    order_by=[["visits", "desc"], ["visit:channel", "asc"]])
    assert rows(channels) == CHANNELS
    named = {name for name, _net, _orders in REVENUE_BY_SOURCE} - {"(unattributed)"}
    assert named <= {name for name, *_ in SOURCES}


def test_rates_are_percent_with_one_decimal_in_every_tool(ask):
    assert ask("get_overview")["bounce_rate"] == BOUNCE_RATE
    rate = ask("query", metrics=["conversion_rate"], filters=[["is", "event:goal", ["Signup"]]])
    assert rate["totals"] == [SIGNUP_RATE]
    by_goal = ask("query", metrics=["visits", "conversion_rate"], dimensions=["event:goal"])
    assert rows(by_goal) == [("Signup", 1, SIGNUP_RATE)]
    funnel = ask("funnel", steps=[{"page": "/**"}, {"goal": "Signup"}])
    assert [(step["count"], step["conversion_rate"]) for step in funnel["steps"]] == [
        (VISITS, 100.0), (1, SIGNUP_RATE)]


def test_describe_data_lists_the_values_query_counts(ask):
    values = ask("describe_data", dimension="visit:source")["values"]["values"]
    assert [(row["value"], row["visitors"]) for row in values] == [
        (name, visitors) for name, _visits, visitors in SOURCES]


@pytest.mark.parametrize(("retired", "arguments", "wanted"), [
    ("get_top_pages", {"limit": 10}, PAGES),
    ("get_top_sources", {"limit": 2}, [("(direct)", 3, 3), ("Google", 1, 1)]),
    ("get_goal_conversions", {"goal": "Signup"}, [("Signup", 1, 1, SIGNUP_RATE)]),
    ("count_events", {"type": "pageview"}, None),
], ids=["pages", "sources", "goals", "events"])
def test_a_retired_tool_names_the_query_call_that_answers_it(shop, ask, retired, arguments,
                                                              wanted):
    """The sentence's JSON, sent to `query` as it stands (with the period the caller gave),
    answers with the hand-counted figures."""
    result = shop.call(retired, {**shop.period, **arguments})
    assert result["isError"] is True and "structuredContent" not in result
    [text] = result["content"]
    prefix = f"{retired} is retired. Call the query tool with these arguments instead: "
    assert text["text"].startswith(prefix)
    call = orjson.loads(text["text"][len(prefix):])
    assert (call["from"], call["to"]) == (shop.period["from"], shop.period["to"])
    answer = ask("query", **call)
    if wanted is None:  # page views per day: all seven on T0's day
        assert sum(row[1] for row in rows(answer)) == PAGEVIEWS
    else:
        assert rows(answer) == wanted



def test_a_period_without_traffic_states_zeros_in_both_tools(shop, ask):
    """The totals alone are one aggregate without GROUP BY (query/statement.py), a row of
    nulls over no visitor: both tools state zeros and no rate, as for a period with no row."""
    assert ask("get_overview")["visitors"] == VISITORS  # the shop's own period has traffic
    empty = {"from": "2020-01-01", "to": "2020-01-31"}
    overview = ask("get_overview", **empty)
    totals = ask("query", metrics=["visitors", "visits", "pageviews", "bounce_rate"], **empty)
    assert {name: overview[name] for name in ("visitors", "visits", "pageviews", "bounce_rate",
                                              "visit_duration", "events_by_type")} == {
        "visitors": 0, "visits": 0, "pageviews": 0, "bounce_rate": None,
        "visit_duration": None, "events_by_type": {}}
    assert totals["totals"] == [0, 0, 0, None]
    assert totals["results"] == [{"dimensions": [], "metrics": [0, 0, 0, None]}]
    assert (totals["total_rows"], totals["warnings"]) == (1, [])
