"""The analytics tools' numbers, against values computed here independently of the SQL.

`build_dataset` seeds one month of traffic (sampled sessions, identified users, refunds, a
resent order, crawler hits, ingest tallies, events just outside the period and another site's
events) straight through the models, each row with the columns ingest derives
(app.tracking.ingest.page_columns); `Expected` recomputes every figure from those Python rows
with the definitions of docs/AGENTS.md written out plainly (a visit's source and channel from
the table SOURCES, written by hand). Each tool is called through the MCP endpoint
(tools/call); tests/agent/test_mcp_client.py runs the same comparison through the official MCP
client against a real server.
"""
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from app.access import keys
from app.rollups import merging as rollups
from models import Event, Site, database
from models.api_key import SERVER
from tests.fixtures.analytics import (
    DOMAIN,
    EVENT_TYPES,
    LAST,
    PERIOD,
    SOURCES,
    Dataset,
    Expected,
    _event,
    acquisition,
    build_dataset,
    check,
    seed,
)

# --- Calling the tools through the endpoint ------------------------------------------------

@pytest.fixture
def dataset(app, make_site) -> Dataset:
    site_keys = make_site(DOMAIN, "standard")
    other = make_site("other.example", "standard")
    data = build_dataset(site_keys.site, other.site)
    with app.app_context():
        seed(data)
    data.keys = site_keys  # type: ignore[attr-defined]
    return data


@pytest.fixture
def call(app, dataset) -> Callable[..., dict[str, Any]]:
    client = app.test_client()

    def call_tool(tool: str, **arguments: Any) -> dict[str, Any]:
        response = client.post("/api/mcp", headers={
            **dataset.keys.server_headers(), "MCP-Protocol-Version": "2025-11-25",
            "Accept": "application/json, text/event-stream"}, json={
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": {**PERIOD, **arguments}}})
        assert response.status_code == 200, response.data
        result = response.get_json()["result"]
        assert result["isError"] is False, result
        assert result["content"][0]["type"] == "text" and result["content"][0]["text"]
        return result["structuredContent"]

    return call_tool


@pytest.fixture
def expected(dataset) -> Expected:
    return Expected(dataset)


# --- The tests ---------------------------------------------------------------------------

def test_the_dataset_covers_what_it_should(expected):
    assert expected.estimated(expected.events)  # sampled sessions
    assert any(e["session_id"] is None for e in expected.events)
    assert {e["type"] for e in expected.events} == set(EVENT_TYPES)
    assert any(r["amount_minor"] < 0 for r in expected.payments())
    assert len({expected.attributed(p) for p in expected.payments()}) >= 4
    # every referrer of the table (Bing: before the period), and a UTM source, begins a visit
    entries = expected.entries().values()
    assert {e["referrer"] for e in entries} | {"https://www.bing.com/"} == set(SOURCES)
    assert any("utm_source=" in e["page_url"] for e in entries)


def test_overview(call, expected):
    check(call("get_overview"), expected.overview())


def test_revenue_per_currency_source_and_channel(call, expected):
    check(call("get_revenue", limit=100), expected.revenue())


def test_revenue_attribution_cases(expected):
    """The rules, case by case, on the seeded rows (the tool is compared above)."""
    by_order = {p["order_id"]: p for p in expected.payments()}
    assert expected.attributed(by_order["lookback"]) == ("Bing", "Organic Search")
    assert expected.attributed(by_order["too-old"]) == ("(unattributed)",) * 2
    assert expected.attributed(by_order["first-hour"]) == ("(unattributed)",) * 2
    named = by_order["named"]
    assert expected.attributed(named) == acquisition(expected.entries()[named["session_id"]])
    assert "february" not in by_order and "april" not in by_order
    assert sum(p["order_id"] == "o1" for p in expected.payments()) == 1


def test_revenue_lists_other_sources_beyond_the_limit(call, expected):
    full = expected.revenue()
    result = call("get_revenue", limit=1)
    for key, other in (("source", "(other sources)"), ("channel", "(other channels)")):
        per_currency = defaultdict(list)
        for row in full[f"by_{key}"]:
            per_currency[row["currency"]].append(row)
        listed_rows = result[f"by_{key}"]
        assert [row["currency"] for row in listed_rows] == sorted(
            row["currency"] for row in listed_rows)
        for currency, rows in per_currency.items():
            listed = [row for row in listed_rows if row["currency"] == currency]
            assert listed[0] == rows[0]
            if len(rows) > 1:
                assert listed[1][key] == other
                assert listed[1]["net_minor"] == sum(row["net_minor"] for row in rows[1:])
                assert listed[1]["orders"] == sum(row["orders"] for row in rows[1:])
                assert Decimal(listed[1]["net"]) == sum(Decimal(row["net"]) for row in rows[1:])


@pytest.mark.parametrize("limit", [2, 100])
def test_web_vitals(call, expected, limit):
    check(call("get_web_vitals", limit=limit), expected.web_vitals(limit))


def test_errors(call, expected):
    check(call("get_errors"), expected.errors())


@pytest.mark.parametrize("arguments", [{}, {"category": "ai_training"}, {"limit": 2}])
def test_crawler_activity(call, expected, arguments):
    check(call("get_crawler_activity", **arguments),
          expected.crawler_activity(arguments.get("limit", 10), arguments.get("category")))


def test_ingest_health(call, expected):
    check(call("get_ingest_health"), expected.ingest_health())


def test_a_period_of_one_day(call, expected):
    day = {"from": "2026-03-31", "to": "2026-03-31"}
    result = call("get_overview", **day)
    rows = [e for e in expected.events if e["occurred_at"].date() == LAST]
    assert sum(result["events_by_type"].values()) == round(sum(e["weight"] for e in rows))
    assert result["from"] == result["to"] == "2026-03-31"


def test_default_period_is_the_last_30_days(app, make_site):
    fresh = make_site("fresh.example", "standard")
    now = datetime.utcnow().replace(microsecond=0)
    with app.app_context(), database.connection_context():
        Event.insert_many([_event(fresh.site.id, f"s{d}", "v", "pageview",
                                  now - timedelta(days=d), domain="fresh.example")
                           for d in (0, 29, 30)]).execute()
        rollups.rebuild()
    response = app.test_client().post("/api/mcp", headers=fresh.server_headers(), json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "get_overview", "arguments": {}}})
    result = response.get_json()["result"]["structuredContent"]
    assert result["to"] == now.date().isoformat()
    assert result["from"] == (now.date() - timedelta(days=29)).isoformat()
    assert result["pageviews"] == 2 and result["visits"] == 2


def test_tools_see_only_the_keys_site(app, dataset):
    with app.app_context(), database.connection_context():
        other = Site.get(Site.domain == "other.example")
        key = keys.issue(other, SERVER, app.config["SERVER_KEY_PREFIX"]).key
    response = app.test_client().post("/api/mcp", headers={
        "Authorization": f"Bearer {key}"}, json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "get_overview", "arguments": PERIOD}})
    result = response.get_json()["result"]["structuredContent"]
    assert result["site"] == "other.example"
    assert result["pageviews"] == 1 and result["visits"] == 1
    assert sum(result["events_by_type"].values()) == len(EVENT_TYPES)
