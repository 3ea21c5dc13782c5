"""The read tools' listing: schemas without $ref (some clients reject recursive ones), and
results that match their output schemas."""
import sqlite3

import jsonschema_rs
import orjson
import pytest

from app.agent.catalogue import TOO_COMPLEX
from models import database
from tests.fixtures import query as query_data
from tests.fixtures.database import BACKEND
from tests.fixtures.helpers import tool_result
from tests.fixtures.query import PERIOD

site, tool = query_data.site, query_data.tool  # fixtures: the query tests' site and tool
READ_TOOLS = ("describe_data", "query", "funnel")
CALLS = {
    "describe_data": {"dimension": "visit:country"},
    "query": {"metrics": ["visitors", "bounce_rate"], "dimensions": ["visit:source"],
              "compare": "previous_period"},
    "funnel": {"steps": [{"page": "/"}, {"goal": "Signup"}],
               "filters": [["is", "visit:country", ["DE"]]]},
}


def listing(app, keys):
    response = app.test_client().post("/api/mcp", headers=keys.server_headers(), json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    return {listed["name"]: listed for listed in response.get_json()["result"]["tools"]}


def test_no_schema_uses_ref(app, site):
    tools = listing(app, site)
    assert b"$ref" not in orjson.dumps(list(tools.values()))
    for name in READ_TOOLS:
        jsonschema_rs.validator_for(tools[name]["inputSchema"])
        assert tools[name]["annotations"]["readOnlyHint"] is True
    assert tools["query"]["inputSchema"]["required"] == ["metrics"]


@pytest.mark.parametrize("name", READ_TOOLS)
def test_results_match_their_output_schema(app, site, tool, name):
    tools = listing(app, site)
    arguments = {**PERIOD, **CALLS[name]}
    assert jsonschema_rs.validator_for(tools[name]["inputSchema"]).is_valid(arguments)
    result = tool(name, **arguments)
    assert result["isError"] is False, result["content"]
    structured = result["structuredContent"]
    assert structured["timezone"] == "Europe/Berlin"
    validator = jsonschema_rs.validator_for(tools[name]["outputSchema"])
    assert validator.is_valid(structured), list(validator.iter_errors(structured))


def test_integral_numbers_written_with_a_fraction_are_the_integers_they_are(site, tool):
    """JSON Schema's `integer` (the input schemas' type) takes 5.0 as 5, as every payload of the
    service does (issue 26); 5.5 stays refused, naming the argument."""
    whole = tool("query", **PERIOD, metrics=["pageviews"], dimensions=["event:page"], limit=1.0)
    assert whole["isError"] is False, whole["content"]
    assert len(whole["structuredContent"]["results"]) == 1
    exact = tool("query", **PERIOD, metrics=["pageviews"], dimensions=["event:page"], limit=1)
    assert whole["structuredContent"] == exact["structuredContent"]
    windowed = tool("funnel", **PERIOD, unit="visitor", window_hours=24.0,
                    steps=[{"page": "/"}, {"goal": "Signup"}])
    assert windowed["isError"] is False, windowed["content"]
    assert windowed["structuredContent"]["window_hours"] == 24
    half = tool("query", **PERIOD, metrics=["pageviews"], limit=1.5)
    assert half["isError"] is True
    assert half["content"][0]["text"] == "`limit` must be an integer from 1 to 1000."


@pytest.mark.skipif(BACKEND != "sqlite", reason="SQLite's limits, lowered for one connection")
def test_a_query_the_database_refuses_for_its_shape_is_a_tool_error(app, std_site):
    """SQLite before 3.32 took 999 bound parameters (SQLITE_MAX_VARIABLE_NUMBER): 1,000 filter
    values are then a statement SQLite refuses ("too many SQL variables"), an OperationalError
    that the endpoint answered 503 "The database is unavailable", as it did for 100 or-ed
    conditions ("parser stack overflow"). Now a tool error, and the database still answers."""
    client = app.test_client()
    arguments = {"period": "7d", "metrics": ["visits"],
                 "filters": [["is", "event:page", [f"/p{n}" for n in range(1000)]]]}
    assert tool_result(client, std_site.server_headers(), "query", arguments)["isError"] is False
    with app.app_context():
        database.connect()  # the request below reuses this thread's connection
        database.connection().setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
        refused = tool_result(client, std_site.server_headers(), "query", arguments)
    assert refused == {"isError": True, "content": [{"type": "text", "text": TOO_COMPLEX}]}
    assert tool_result(client, std_site.server_headers(), "query", arguments)["isError"] is False
