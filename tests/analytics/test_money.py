"""Money in `query` (total_revenue, orders, average_revenue, `currency`) on the shop of
tests/analytics/shop.py, whose revenue is worked out there (USD): 10.00 credited by
identifiedUserId u1 to A's visit s1 (Google), 5.50 with sessionId s2 (newsletter), a refund
-2.00 with sessionId s3 ((direct)), 3.00 linked to nothing (no visit: the null row).

USD: total 10.00 + 5.50 - 2.00 + 3.00 = 16.50, orders 3, average 16.50 / 3 = 5.50. By
visit:source: Google 10.00 (1), newsletter 5.50 (1), null 3.00 (1), (direct) -2.00 (0 orders,
no average). Visits with a /pricing event (an event:* filter): s1, s2: 15.50, 2 orders.
Two more currencies, posted in a test: EUR 68.99 and JPY 500 (sessionId s4, C's visit, Hacker
News): then the period holds three and `currency` must pick one.
"""
import orjson
import pytest

from tests.fixtures.mcp import sdk_calls


def rows(found):
    return [(*row["dimensions"], *row["metrics"]) for row in found["results"]]


METRICS = ["total_revenue", "orders", "average_revenue"]


def test_the_only_currency_by_default(ask):
    found = ask("query", metrics=METRICS)
    assert found["totals"] == [16.5, 3, 5.5]
    assert found["currency"] == "USD"


def test_credited_to_the_visits_get_revenue_credits(ask):
    found = ask("query", metrics=METRICS, dimensions=["visit:source"])
    assert rows(found) == [("Google", 10.0, 1, 10.0), ("newsletter", 5.5, 1, 5.5),
                           (None, 3.0, 1, 3.0), ("(direct)", -2.0, 0, None)]
    by_source = {row["source"]: row["net"] for row in ask("get_revenue")["by_source"]}
    assert by_source == {"Google": "10.00", "newsletter": "5.50", "(unattributed)": "3.00",
                         "(direct)": "-2.00"}


def test_filters_select_the_credited_visits(ask):
    assert ask("query", metrics=METRICS, filters=[
        ["is", "visit:source", ["newsletter"]]])["totals"] == [5.5, 1, 5.5]
    assert ask("query", metrics=METRICS, filters=[
        ["is", "event:page", ["/pricing"]]])["totals"] == [15.5, 2, 7.75]
    assert ask("query", metrics=["total_revenue"], filters=[
        ["has_not_done", ["is", "event:page", ["/pricing"]]]])["totals"] == [-2.0]


def _pay(shop, client, order, currency, minor):
    response = client.post("/api/server/events", headers=shop.server_headers(),
                           data=orjson.dumps({"eventName": "purchase", "currency": currency,
                                              "orderId": order, "sessionId": "s4",
                                              "revenue_cents": minor}),
                           content_type="application/json")
    assert response.status_code == 200, response.get_data()


@pytest.fixture
def currencies(app, shop):
    client = app.test_client()
    _pay(shop, client, "e1", "EUR", 6899)
    _pay(shop, client, "j1", "JPY", 500)
    return shop


def test_several_currencies(currencies, ask):
    found = ask("query", metrics=METRICS, currency="EUR", dimensions=["visit:source"])
    assert rows(found) == [("Hacker News", 68.99, 1, 68.99)] and found["currency"] == "EUR"
    found = ask("query", metrics=["total_revenue"], currency="jpy")
    assert found["totals"] == [500] and found["currency"] == "JPY"
    assert ask("query", metrics=["total_revenue"], currency="USD")["totals"] == [16.5]


def test_refusals_after_their_valid_variants(currencies, ask):
    ask("query", metrics=["total_revenue"], currency="EUR")
    for arguments, says in (
            ({"metrics": ["total_revenue"]}, "holds payments in EUR, JPY, USD"),
            ({"metrics": ["total_revenue"], "currency": "XYZ"}, "Invalid currency 'XYZ'"),
            ({"metrics": ["total_revenue", "visits"], "currency": "EUR"}, "of their own"),
            ({"metrics": ["total_revenue"], "currency": "EUR", "dimensions": ["event:page"]},
             "cannot split money metrics"),
            ({"metrics": ["visits"], "currency": "EUR"}, "goes with the money metrics")):
        result = currencies.call("query", {**currencies.period, **arguments})
        assert result["isError"] is True, (arguments, result)
        assert says in result["content"][0]["text"], result


def test_by_time_by_visitor_type_and_compared(ask):
    # every payment today (its own time: T0 + a few seconds, by the clock of ingest)
    found = ask("query", metrics=["total_revenue"], dimensions=["time:day"])
    assert len(found["results"]) == 1 and found["totals"] == [16.5]
    # A's s1, B's s2 are new (first visits); B's s3 returns; the 3.00 has no visit
    assert rows(ask("query", metrics=["total_revenue", "orders"],
                    dimensions=["visit:visitor_type"])) == [
        ("new", 15.5, 2), (None, 3.0, 1), ("returning", -2.0, 0)]
    compared = ask("query", metrics=["total_revenue", "orders"], compare="previous_period")
    assert compared["comparison"]["totals"] == [0, 0]


@pytest.mark.slow
def test_money_through_the_sdk_client(shop, start_server):
    live = start_server(workers=1)
    answers = sdk_calls(f"{live.url}/api/mcp", shop.server_key, {
        "money": ("query", {**shop.period, "metrics": METRICS,
                            "dimensions": ["visit:channel"]}),
    })
    money = answers["money"]
    assert money.is_error is False, money.content
    assert rows(money.structured_content) == [
        ("Organic Search", 10.0, 1, 10.0), ("Email", 5.5, 1, 5.5), (None, 3.0, 1, 3.0),
        ("Direct", -2.0, 0, None)]


def test_every_currency_by_source_equals_get_revenue(currencies, ask):
    # the refund, the payment without a visit and EUR, JPY: each currency's query rows by
    # visit:source are get_revenue's by_source rows of that currency
    revenue = ask("get_revenue")["by_source"]
    for currency in ("USD", "EUR", "JPY"):
        found = ask("query", metrics=["total_revenue", "orders"], currency=currency,
                    dimensions=["visit:source"])
        queried = {source or "(unattributed)": (total, orders)
                   for source, total, orders in rows(found)}
        expected = {row["source"]: (float(row["net"]), row["orders"])
                    for row in revenue if row["currency"] == currency}
        assert queried == expected, currency
    assert {row["currency"] for row in revenue} == {"USD", "EUR", "JPY"}
