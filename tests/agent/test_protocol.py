"""POST /api/mcp as a JSON-RPC / MCP Streamable HTTP endpoint: transport, errors, eras, auth.

The numbers the tools return are tests/analytics/test_analytics.py's; the official client against
a real server is tests/agent/test_mcp_client.py.
"""
import json
from typing import Any

import jsonschema_rs
import orjson
import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from app.access import keys
from models import IngestTally, database
from models.api_key import SERVER
from tests.fixtures.mcp import ACCEPT, MODERN, MODERN_META, call, rpc

TOOL_NAMES = ["get_overview", "get_revenue", "get_web_vitals", "get_errors",
              "get_crawler_activity", "get_ingest_health"]
# The read surface's tools come first (tests/agent/test_read_tools.py covers them).
LISTED = ["describe_data", "query", "funnel", "retention", "paths", *TOOL_NAMES]


@pytest.fixture
def post(app, std_site):
    client = app.test_client()

    def send(body: Any, version: str | None = "2025-11-25", raw: bytes | None = None,
             **headers: str):
        sent = {**std_site.server_headers(), "Accept": ACCEPT,
                "Content-Type": "application/json", **headers}
        if version is not None:
            sent["MCP-Protocol-Version"] = version
        return client.post("/api/mcp", data=raw if raw is not None else orjson.dumps(body),
                           headers={k: v for k, v in sent.items() if v is not None})

    return send


def error_of(response, code: int, status: int, request_id: Any = 1) -> dict[str, Any]:
    assert response.status_code == status, response.data
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert body["jsonrpc"] == "2.0" and body["id"] == request_id and "result" not in body
    assert body["error"]["code"] == code, body
    assert body["error"]["message"]
    return body["error"]


def result_of(response, request_id: Any = 1) -> dict[str, Any]:
    assert response.status_code == 200, response.data
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert body["jsonrpc"] == "2.0" and body["id"] == request_id and "error" not in body
    return body["result"]


INITIALIZE = {"protocolVersion": "2025-06-18", "capabilities": {},
              "clientInfo": {"name": "test", "version": "1.0"}}


# --- Lifecycle: the handshake era ----------------------------------------------------------

@pytest.mark.parametrize("version", HANDSHAKE_PROTOCOL_VERSIONS)
def test_initialize_accepts_every_handshake_revision(post, version):
    response = post(rpc("initialize", {**INITIALIZE, "protocolVersion": version}), version=None)
    result = result_of(response)
    assert result["protocolVersion"] == version
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    assert result["serverInfo"]["name"] == "egis" and result["serverInfo"]["version"]
    assert "get_overview" in result["instructions"]
    assert "Mcp-Session-Id" not in response.headers  # stateless


def test_initialize_counter_offers_the_latest_revision(post):
    result = result_of(post(rpc("initialize", {**INITIALIZE, "protocolVersion": "2030-01-01"}),
                            version=None))
    assert result["protocolVersion"] == LATEST_HANDSHAKE_VERSION


def test_initialize_with_invalid_params(post):
    error = error_of(post(rpc("initialize", {"protocolVersion": "2025-06-18"}), version=None),
                     -32602, 200)
    assert "clientInfo" in error["message"] or "capabilities" in error["message"]


@pytest.mark.parametrize("message", [
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}},
    {"jsonrpc": "2.0", "id": 9, "result": {}},  # a response from the client
], ids=["initialized", "cancelled", "client-response"])
def test_notifications_and_responses_are_accepted_without_a_body(post, message):
    response = post(message)
    assert response.status_code == 202
    assert response.data == b""


def test_ping(post):
    assert result_of(post(rpc("ping", request_id="abc"), version="2025-06-18"),
                     request_id="abc") == {}


def test_requests_without_a_version_header_use_2025_03_26(post):
    assert result_of(post(rpc("ping"), version=None)) == {}


# --- tools/list ---------------------------------------------------------------------------

def test_tools_list(post):
    tools = result_of(post(rpc("tools/list")))["tools"]
    assert [tool["name"] for tool in tools] == LISTED
    tools = [tool for tool in tools if tool["name"] in TOOL_NAMES]
    for tool in tools:
        schema = tool["inputSchema"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert {"from", "to"} <= set(schema["properties"])
        assert schema["properties"]["from"]["format"] == "date"
        assert not schema.get("required")  # every argument is optional
        assert tool["outputSchema"]["type"] == "object"
        assert {"site", "from", "to", "estimated"} <= set(tool["outputSchema"]["required"])
        assert tool["annotations"]["readOnlyHint"] is True
        assert tool["title"] and tool["description"]
        jsonschema_rs.validator_for(schema)
        jsonschema_rs.validator_for(tool["outputSchema"])
    listing = {tool["name"]: tool for tool in tools}
    for name in TOOL_NAMES:
        if name not in ("get_overview", "get_ingest_health"):
            assert listing[name]["inputSchema"]["properties"]["limit"]["maximum"] == 100
    assert "category" in listing["get_crawler_activity"]["inputSchema"]["properties"]


# --- tools/call ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", TOOL_NAMES)
def test_every_tool_answers_with_its_output_schema(post, name):
    tools = {tool["name"]: tool for tool in result_of(post(rpc("tools/list")))["tools"]}
    result = result_of(post(call(name, {"from": "2026-03-01", "to": "2026-03-31"})))
    assert result["isError"] is False
    [text] = result["content"]
    assert text["type"] == "text" and "std.example, 2026-03-01 to 2026-03-31" in text["text"]
    structured = result["structuredContent"]
    assert structured["site"] == "std.example"
    assert (structured["from"], structured["to"]) == ("2026-03-01", "2026-03-31")
    validator = jsonschema_rs.validator_for(tools[name]["outputSchema"])
    assert validator.is_valid(structured), list(validator.iter_errors(structured))


def test_older_revisions_also_get_the_json_as_text(post):
    """structuredContent arrived in 2025-06-18: older clients read the JSON block instead."""
    result = result_of(post(call("get_overview"), version="2025-03-26"))
    summary, data = result["content"]
    assert summary["text"].startswith("Overview for std.example")
    assert orjson.loads(data["text"]) == result["structuredContent"]


NOT_AN_INTEGER = "Not a valid integer (a whole JSON number such as 1999 is required)."


@pytest.mark.parametrize("limit", [100.0, 1e2, 1.0])
def test_limit_is_any_whole_number(post, app, std_site, limit):
    """JSON Schema's integer, as tools/list gives it: 100.0 is 100."""
    result = result_of(post(call("get_errors", {"limit": limit})))
    assert result["isError"] is False, result


@pytest.mark.parametrize(("arguments", "says"), [
    ({"from": "yesterday"}, "from: Not a valid date."),
    ({"from": "2026-03-10", "to": "2026-03-01"}, "`from` (2026-03-10) is after `to`"),
    ({"from": "2024-01-01", "to": "2026-01-01"}, "more than 366 days"),
    ({"days": 7}, "days: Unknown field."),
    ({"limit": 0}, "limit: Must be greater than or equal to 1"),
    ({"limit": 101}, "limit: Must be greater than or equal to 1 and less than or equal to 100"),
    ({"limit": "5"}, f"limit: {NOT_AN_INTEGER}"),
    ({"limit": True}, f"limit: {NOT_AN_INTEGER}"),
    ({"limit": 5.5}, f"limit: {NOT_AN_INTEGER}"),
    ({"limit": 100.5}, f"limit: {NOT_AN_INTEGER}"),
    ({"limit": 101.0}, "limit: Must be greater than or equal to 1 and less than or equal to 100"),
    ({"category": "bots"}, "category: Must be one of"),
    ({"from": 20260301}, "from: Not a valid date."),
], ids=["bad-date", "from-after-to", "too-long", "unknown", "limit-0", "limit-101",
        "limit-string", "limit-bool", "limit-5.5", "limit-100.5", "limit-101.0", "bad-category",
        "date-number"])
def test_bad_arguments_are_tool_errors_the_model_can_read(post, arguments, says):
    result = result_of(post(call("get_crawler_activity", arguments)))
    assert result["isError"] is True
    assert "structuredContent" not in result
    [text] = result["content"]
    assert text["text"].startswith("Invalid arguments for get_crawler_activity: ")
    assert says in text["text"]


def test_unknown_tool_is_invalid_params(post):
    error = error_of(post(call("get_everything")), -32602, 200)
    assert "get_everything" in error["message"]


@pytest.mark.parametrize("params", [{"arguments": {}}, {"name": 5}, {"name": "get_overview",
                                                                       "arguments": "x"}],
                         ids=["no-name", "name-not-string", "arguments-not-object"])
def test_malformed_tools_call_is_invalid_params(post, params):
    error_of(post(rpc("tools/call", params)), -32602, 200)


# --- JSON-RPC errors ----------------------------------------------------------------------

def test_parse_error(post):
    error_of(post(None, raw=b'{"jsonrpc": "2.0", "id": 1, "method": '), -32700, 400,
             request_id=None)


@pytest.mark.parametrize(("body", "request_id"), [
    ({"id": 1, "method": "ping"}, None),
    ({"jsonrpc": "1.0", "id": 1, "method": "ping"}, None),
    ({"jsonrpc": "2.0", "id": 1, "method": 7}, 1),
    ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None),
    ({"jsonrpc": "2.0", "id": {"n": 1}, "method": "ping"}, None),
    ({"jsonrpc": "2.0", "id": [1], "method": "ping"}, None),
    ({"jsonrpc": "2.0", "id": -575.0, "method": None}, -575.0),
    ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),
    ("ping", None), (5, None), ({"jsonrpc": "2.0", "id": 2}, 2),
], ids=["no-jsonrpc", "jsonrpc-1", "method-number", "id-bool", "id-object", "id-array",
        "method-null", "id-null", "string", "number", "no-method"])
def test_invalid_request(post, body, request_id):
    error_of(post(body), -32600, 400, request_id=request_id)


@pytest.mark.parametrize("method", ["resources/list", "prompts/list", "tools/delete",
                                    "server/discover", "", " "])
def test_unknown_method(post, method):
    error = error_of(post(rpc(method)), -32601, 200)
    assert error["message"] == f'Method not found: "{method}"'


def test_a_null_id_is_refused_by_name(post):
    """MCP: "the ID MUST NOT be null"; in a batch, the member alone is refused."""
    error = error_of(post({"jsonrpc": "2.0", "id": None, "method": "ping"}), -32600, 400,
                     request_id=None)
    assert error["message"] == ("Invalid request: `method` must be a string and `id` a string "
                                "or a number (not null).")
    response = post(None, raw=b'[{"jsonrpc": "2.0", "id": null, "method": "ping"}, '
                              b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', version=None)
    assert response.status_code == 200
    assert [reply.get("error", {}).get("code") for reply in response.get_json()] == [-32600, None]


# An id is a string or a number (MCP refuses null); the answer carries it as the body wrote it.
ECHOED_IDS = ["-575.0", "1.5", "1.10", "1e3", "-0.0", "0.1000000000000000000001",
              "18446744073709551617", "-9223372036854775809", "18446744073709551615", "7",
              '"7"', '""']


@pytest.mark.parametrize("written", ECHOED_IDS)
def test_ids_are_echoed_as_written(post, written):
    raw = f'{{"jsonrpc": "2.0", "id": {written}, "method": "ping"}}'.encode()
    response = post(None, raw=raw)
    assert response.status_code == 200, response.data
    assert response.data == f'{{"jsonrpc":"2.0","id":{written},"result":{{}}}}'.encode()


def test_an_error_echoes_the_id_as_written(post):
    raw = b'{"jsonrpc": "2.0", "id": -575.0, "method": ""}'
    response = post(None, raw=raw)
    assert response.status_code == 200
    assert orjson.loads(response.data)["error"] == {"code": -32601,
                                                    "message": 'Method not found: ""'}
    assert b'"id":-575.0,' in response.data


def test_batch_members_echo_their_ids_as_written(post):
    raw = (b'[{"jsonrpc": "2.0", "id": 2.50, "method": "ping"}, '
           b'{"jsonrpc": "2.0", "id": 3, "method": "ping"}, '
           b'{"jsonrpc": "2.0", "method": "notifications/x"}, '
           b'{"jsonrpc": "2.0", "id": 18446744073709551617, "method": "nope"}]')
    response = post(None, raw=raw, version=None)
    assert response.status_code == 200
    assert response.data.startswith(b'[{"jsonrpc":"2.0","id":2.50,"result":{}},'
                                    b'{"jsonrpc":"2.0","id":3,"result":{}},'
                                    b'{"jsonrpc":"2.0","id":18446744073709551617,"error":')


def test_a_body_too_deep_to_read_twice_echoes_the_id_as_a_double(post):
    """orjson reads 1024 levels, the standard library fewer: the id is then orjson's."""
    deep = "[" * 1020 + "]" * 1020
    with pytest.raises(RecursionError):  # the premise: the standard library cannot read it
        json.loads(deep)
    raw = f'{{"jsonrpc": "2.0", "id": 1.10, "method": "nope", "params": {{"a": {deep}}}}}'
    response = post(None, raw=raw.encode())
    assert response.status_code == 200
    assert b'"id":1.1,' in response.data


def test_unsupported_version_header(post):
    error = error_of(post(rpc("tools/list"), version="1900-01-01"), -32022, 400,
                     request_id=None)
    assert error["data"]["requested"] == "1900-01-01"
    assert set(error["data"]["supported"]) == {*HANDSHAKE_PROTOCOL_VERSIONS, MODERN}


# --- Batches: only the revisions that had them ----------------------------------------------

def test_batch_on_2025_03_26(post):
    response = post([rpc("ping", request_id=1), {"jsonrpc": "2.0", "method": "notifications/x"},
                     rpc("tools/list", request_id=2), rpc("nope", request_id=3)], version=None)
    assert response.status_code == 200
    replies = {reply["id"]: reply for reply in response.get_json()}
    assert set(replies) == {1, 2, 3}
    assert replies[1]["result"] == {}
    assert len(replies[2]["result"]["tools"]) == len(LISTED)
    assert replies[3]["error"]["code"] == -32601


def test_batch_of_notifications_only(post):
    response = post([{"jsonrpc": "2.0", "method": "notifications/initialized"}],
                    version="2025-03-26")
    assert response.status_code == 202 and response.data == b""


def test_initialize_may_not_be_batched(post):
    response = post([rpc("initialize", INITIALIZE, request_id=1)], version=None)
    [reply] = response.get_json()
    assert reply["id"] == 1 and reply["error"]["code"] == -32600


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", MODERN])
def test_batches_are_refused_from_2025_06_18(post, version):
    error = error_of(post([rpc("ping")], version=version), -32600, 400, request_id=None)
    assert "batch" in error["message"]


def test_empty_batch(post):
    error_of(post([], version=None), -32600, 400, request_id=None)


# --- The stateless era (2026-07-28) ----------------------------------------------------------

def modern(method: str, params: dict[str, Any] | None = None, request_id: Any = 1
           ) -> dict[str, Any]:
    return rpc(method, {**(params or {}), "_meta": MODERN_META}, request_id)


def test_discover(post):
    result = result_of(post(modern("server/discover"), version=MODERN,
                            **{"Mcp-Method": "server/discover"}))
    assert result["supportedVersions"] == [MODERN]
    assert result["capabilities"]["tools"] == {"listChanged": False}
    assert result["resultType"] == "complete"
    assert result["cacheScope"] == "private" and result["ttlMs"] > 0
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "egis"


def test_modern_tools_list_and_call(post):
    listed = result_of(post(modern("tools/list"), version=MODERN,
                            **{"Mcp-Method": "tools/list"}))
    assert [tool["name"] for tool in listed["tools"]] == LISTED
    assert listed["resultType"] == "complete" and "ttlMs" in listed
    result = result_of(post(modern("tools/call", {"name": "get_errors", "arguments": {}}),
                            version=MODERN, **{"Mcp-Method": "tools/call",
                                               "Mcp-Name": "get_errors"}))
    assert result["resultType"] == "complete" and result["isError"] is False
    assert result["structuredContent"]["errors"] == []


@pytest.mark.parametrize(("headers", "code"), [
    ({"Mcp-Method": "tools/call"}, -32020),  # the header says another method
    ({}, -32020),  # no Mcp-Method at all
], ids=["method-mismatch", "method-missing"])
def test_modern_headers_must_match_the_body(post, headers, code):
    error = error_of(post(modern("tools/list"), version=MODERN, **headers), code, 400)
    assert "header" in error["message"]


def test_modern_request_needs_the_envelope(post):
    error_of(post(rpc("tools/list", {}), version=MODERN, **{"Mcp-Method": "tools/list"}),
             -32602, 400)


def test_a_2026_envelope_without_its_headers_is_refused(post):
    error_of(post(modern("tools/list"), version=None), -32020, 400)


@pytest.mark.parametrize("method", ["initialize", "ping", "resources/list"])
def test_modern_unknown_methods_are_404(post, method):
    error_of(post(modern(method), version=MODERN, **{"Mcp-Method": method}), -32601, 404)


# --- HTTP ----------------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_only_post(app, std_site, method):
    response = app.test_client().open("/api/mcp", method=method,
                                          headers={**std_site.server_headers(),
                                                   "Accept": "text/event-stream"})
    assert response.status_code == 405
    assert response.get_json()["error"]
    assert "POST" in response.headers["Allow"]


def test_the_client_must_accept_json(post):
    response = post(rpc("ping"), Accept="text/html")
    assert response.status_code == 406
    assert set(response.get_json()) == {"error"}
    assert post(rpc("ping"), Accept="*/*").status_code == 200
    assert post(rpc("ping"), Accept=None).status_code == 200


def test_the_body_must_be_json(post):
    response = post(rpc("ping"), **{"Content-Type": "text/plain"})
    assert response.status_code == 415
    assert set(response.get_json()) == {"error"}


# --- Auth: server key only -----------------------------------------------------------------

def test_auth_matrix(app, std_site, free_site):
    client = app.test_client()
    body = orjson.dumps(call("get_overview"))
    with app.app_context(), database.connection_context():
        revoked = keys.issue(std_site.site, SERVER, app.config["SERVER_KEY_PREFIX"]).key
        keys.revoke(revoked)
    cases = [
        ({}, 401),
        ({"Authorization": "Bearer egiss_" + "A" * 43}, 401),
        ({"Authorization": f"Bearer {revoked}"}, 401),
        ({"Authorization": "Basic abc"}, 401),
        ({"X-API-Key": std_site.server_key}, 401),  # server keys travel as Bearer only
        ({"X-API-Key": std_site.write_key}, 401),
        ({"Authorization": f"Bearer {std_site.write_key}"}, 403),
        ({"Authorization": f"Bearer {free_site.write_key}"}, 403),
        ({"Authorization": f"Bearer {std_site.server_key}"}, 200),
        ({"Authorization": f"Bearer {free_site.server_key}"}, 200),
    ]
    for headers, status in cases:
        response = client.post("/api/mcp", data=body, headers={
            **headers, "Content-Type": "application/json", "Accept": ACCEPT})
        assert response.status_code == status, (headers, response.data)
        payload = response.get_json()
        if status == 200:
            assert payload["result"]["structuredContent"]["site"] in ("std.example",
                                                                      "free.example")
        else:
            assert set(payload) == {"error"}, payload  # never a JSON-RPC result
    with app.app_context(), database.connection_context():
        assert IngestTally.select().count() == 0  # not ingest: nothing tallied


def test_a_write_key_never_reaches_the_protocol(app, std_site):
    response = app.test_client().post("/api/mcp", data=orjson.dumps(rpc("tools/list")),
                                      headers={"Authorization": f"Bearer {std_site.write_key}",
                                               "Content-Type": "application/json"})
    assert response.status_code == 403
    assert "server key" in response.get_json()["error"]


def test_rate_limited_per_key(make_app, std_site):
    app = make_app(RATE_LIMIT_MCP="2/minute")
    client = app.test_client()
    headers = {**std_site.server_headers(), "Content-Type": "application/json"}
    for _ in range(2):
        assert client.post("/api/mcp", data=orjson.dumps(rpc("ping")),
                           headers=headers).status_code == 200
    response = client.post("/api/mcp", data=orjson.dumps(rpc("ping")), headers=headers)
    assert response.status_code == 429
    assert int(response.headers["Retry-After"]) > 0
    assert set(response.get_json()) == {"error"}
    with app.app_context(), database.connection_context():
        assert IngestTally.select().count() == 0
