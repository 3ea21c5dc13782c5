"""The catalogue an agent reads before every conversation: the whole tools/list answer stays
under app.agent.tools.CATALOGUE_LIMIT characters of JSON in every protocol era, without a
recursive `$ref` (some clients refuse them), with every name of the contract still in it, and
without the retired tools."""
from typing import Any

import orjson
import pytest

from app.agent.retired import RETIRED
from app.agent.tools import CATALOGUE_LIMIT
from app.analytics.filters import LOGIC, OPS
from app.analytics.period import PERIODS
from app.analytics.vocabulary import DIMENSION_NAMES, METRICS

MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {},
               "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}
TOOLS = ["describe_data", "query", "funnel", "retention", "paths", "get_overview",
         "get_revenue", "get_web_vitals", "get_errors", "get_crawler_activity", "get_ingest_health"]
# what the tools' results are read by (docs/AGENTS.md): each must appear in the catalogue
RESULT_NAMES = ["results", "totals", "total_rows", "warnings", "comparison", "change",
                "estimated", "timezone", "steps", "conversion_rate", "step_conversion_rate",
                "dropoff", "visitors", "visits", "pageviews", "bounce_rate", "visit_duration",
                "events_by_type", "currencies", "by_source", "by_channel", "net_minor",
                "site_vitals", "pages", "p75", "rating", "lcp", "inp", "cls", "fcp", "ttfb",
                "errors", "occurrences", "last_seen", "categories", "crawlers", "top_paths",
                "days", "rejected"]
ARGUMENT_NAMES = ["metrics", "dimensions", "filters", "compare", "order_by", "limit", "offset",
                  "from", "to", "period", "previous_period", "year_over_year", "case_sensitive",
                  "steps", "page", "goal", "event", "label", "unit", "visitor",
                  "window_hours", "search", "category"]


@pytest.fixture
def listing(app, std_site):
    client = app.test_client()

    def answer(era: str, capabilities: dict[str, Any] | None = None) -> bytes:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        headers = {**std_site.server_headers(), "Accept": "application/json",
                   "MCP-Protocol-Version": era}
        if era == "2026-07-28":
            body["params"] = {"_meta": {
                **MODERN_META,
                "io.modelcontextprotocol/clientCapabilities": capabilities or {}}}
            headers["Mcp-Method"] = "tools/list"
        response = client.post("/api/mcp", data=orjson.dumps(body), headers=headers,
                               content_type="application/json")
        assert response.status_code == 200, response.data
        return response.data

    return answer


@pytest.mark.parametrize("era", ["2025-06-18", "2025-11-25", "2026-07-28"])
def test_the_whole_answer_is_small(listing, era):
    body = listing(era)
    tools = orjson.loads(body)["result"]["tools"]
    assert [tool["name"] for tool in tools] == TOOLS
    assert len(body.decode()) < CATALOGUE_LIMIT <= 18_000, len(body)


def test_the_answer_with_the_chart_apps_is_small_too(listing):
    """A host that renders MCP Apps also reads `_meta.ui` on query and funnel."""
    plain = listing("2026-07-28")
    charts = listing("2026-07-28", {"extensions": {"io.modelcontextprotocol/ui": {
        "mimeTypes": ["text/html;profile=mcp-app"]}}})
    assert b"ui://egis/query" in charts and b"ui://egis/query" not in plain
    assert len(plain) < len(charts) < CATALOGUE_LIMIT, len(charts)


def test_no_schema_refers_to_another(listing):
    text = listing("2025-11-25").decode()
    assert "$ref" not in text and "$defs" not in text and "\"definitions\":" not in text


def test_every_name_of_the_contract_is_listed(listing):
    text = listing("2025-11-25").decode()
    names = [*TOOLS, *METRICS, *DIMENSION_NAMES, *OPS, *LOGIC, *PERIODS, *RESULT_NAMES,
             *ARGUMENT_NAMES]
    missing = [name for name in names if f'"{name}"' not in text and name not in text]
    assert not missing


def test_retired_tools_are_not_listed_but_answer(listing, app, std_site):
    text = listing("2025-11-25").decode()
    for name in RETIRED:
        assert f'"{name}"' not in text
        response = app.test_client().post("/api/mcp", headers=std_site.server_headers(), json={
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": {}}})
        result = response.get_json()["result"]
        assert result["isError"] is True
        assert result["content"][0]["text"].startswith(f"{name} is retired. Call the query "
                                                       "tool with these arguments instead: {")
