"""The chart apps on the wire (raw JSON-RPC through /api/mcp): who sees them, in both eras.

A client that declares `io.modelcontextprotocol/ui` with the HTML profile sees `_meta.ui` on
`query` and `funnel`, the `resources` capability and the two apps; in the handshake era the
declaration comes back with every request in the signed Mcp-Session-Id that `initialize`
issued, in the 2026-07-28 era in each request's `_meta`. Every other client's answers are
compared byte for byte with those of a client that declared nothing, which see none of it.
The apps drawn in Chromium: tests/agent/apps/.
"""
import gzip
import re
from typing import Any

import orjson
import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from app.agent.apps import EXTENSION, MIME_TYPE
from app.agent.session import Declaration, SessionIds
from tests.fixtures.mcp import ACCEPT, MODERN, MODERN_META, call, rpc

APPS = {"query": "ui://egis/query", "funnel": "ui://egis/funnel",
        "retention": "ui://egis/retention", "paths": "ui://egis/paths"}
UI = {EXTENSION: {"mimeTypes": [MIME_TYPE]}}
NOT_DECLARING = {  # capabilities that do not declare the apps, and answers the same as none
    "none": {},
    "other extension": {"extensions": {"com.example/other": {}}},
    "another profile": {"extensions": {EXTENSION: {"mimeTypes": ["text/html"]}}},
    "no mime types": {"extensions": {EXTENSION: {}}},
    "malformed": {"extensions": {EXTENSION: {"mimeTypes": MIME_TYPE}}},
    "experimental": {"experimental": {EXTENSION: {"mimeTypes": [MIME_TYPE]}}},
}
QUERY = {"metrics": ["visitors"], "dimensions": ["time:day"], "period": "7d"}


@pytest.fixture
def send(app, std_site):
    """POST one message; `version` the MCP-Protocol-Version header, `session` the id."""
    client = app.test_client()

    def post(message: Any, version: str | None = "2025-11-25", session: str | None = None,
             **headers: str):
        sent = {**std_site.server_headers(), "Accept": ACCEPT,
                "Content-Type": "application/json", "MCP-Protocol-Version": version,
                "Mcp-Session-Id": session, **headers}
        return client.post("/api/mcp", data=orjson.dumps(message),
                           headers={k: v for k, v in sent.items() if v is not None})

    return post


def initialize(version: str, capabilities: dict[str, Any]) -> dict[str, Any]:
    return rpc("initialize", {"protocolVersion": version, "capabilities": capabilities,
                              "clientInfo": {"name": "test", "version": "1"}})


def result(response) -> dict[str, Any]:
    assert response.status_code == 200, response.data
    return response.get_json()["result"]


def conversation(send, version: str, session: str | None) -> list[bytes]:
    """What a handshake-era client reads after initialize, as the bytes of each answer."""
    return [send(message, version, session).data for message in (
        rpc("ping"), rpc("tools/list"), call("query", QUERY), call("funnel", {"steps": [
            {"page": "/"}, {"page": "/pricing"}]}), rpc("resources/list"),
        rpc("resources/read", {"uri": APPS["query"]}))]


# --- the handshake era ----------------------------------------------------------------------

@pytest.mark.parametrize("version", HANDSHAKE_PROTOCOL_VERSIONS)
def test_a_declaring_client_gets_a_session_that_shows_the_apps(send, version):
    opened = send(initialize(version, {"extensions": UI}), version=None)
    capabilities = result(opened)["capabilities"]
    assert capabilities.pop("tools") == capabilities.pop("resources") == {"listChanged": False}
    # the extension itself, where the revision's schema has server extensions
    assert capabilities in ({}, {"extensions": {EXTENSION: {}}})
    session = opened.headers["Mcp-Session-Id"]
    assert re.fullmatch(r"[\x21-\x7e]+", session)  # visible ASCII, as the transport spec says
    tools = {tool["name"]: tool for tool in result(send(rpc("tools/list"), version,
                                                        session))["tools"]}
    for name, uri in APPS.items():
        assert tools[name]["_meta"] == {"ui": {"resourceUri": uri}, "ui/resourceUri": uri}
    assert [name for name, tool in tools.items() if "_meta" in tool] == list(APPS)
    listed = result(send(rpc("resources/list"), version, session))["resources"]
    assert [(r["uri"], r["mimeType"]) for r in listed] == [(uri, MIME_TYPE)
                                                            for uri in APPS.values()]
    assert result(send(rpc("resources/templates/list"), version, session)) == {
        "resourceTemplates": []}
    for uri in APPS.values():
        [app] = result(send(rpc("resources/read", {"uri": uri}), version, session))["contents"]
        assert app["uri"] == uri and app["mimeType"] == MIME_TYPE
        assert app["_meta"] == {"ui": {"csp": {"connectDomains": [], "resourceDomains": []},
                                       "prefersBorder": True}}
        self_contained(app["text"])


def self_contained(html: str) -> None:
    """One HTML document, every script and style inline, nothing fetched, within 48 KiB."""
    assert html.startswith("<!doctype html>") and html.rstrip().endswith("</html>")
    assert re.search(r"<script>.+</script>", html, re.S) and re.search(r"<style>.+</style>",
                                                                      html, re.S)
    assert not re.search(r"<(script|link|img|iframe)\b[^>]*\b(src|href)=", html, re.I)
    assert not re.search(r"\b(fetch|XMLHttpRequest|WebSocket|EventSource|sendBeacon)\b", html)
    assert len(gzip.compress(html.encode(), 9)) <= 48 * 1024


@pytest.mark.parametrize("version", HANDSHAKE_PROTOCOL_VERSIONS)
@pytest.mark.parametrize("capabilities", NOT_DECLARING.values(), ids=NOT_DECLARING)
def test_every_other_client_gets_the_answers_of_one_that_declared_nothing(send, version,
                                                                          capabilities):
    plain = send(initialize(version, {}), version=None)
    other = send(initialize(version, capabilities), version=None)
    assert other.data == plain.data
    assert "Mcp-Session-Id" not in other.headers and "Mcp-Session-Id" not in plain.headers
    assert result(plain)["capabilities"] == {"tools": {"listChanged": False}}
    answers = conversation(send, version, None)
    assert b"ui://" not in answers[1] and b"_meta" not in answers[1]
    for unknown in answers[4:]:  # resources/* do not exist for it, as before the apps
        assert orjson.loads(unknown)["error"]["code"] == -32601


@pytest.mark.parametrize("version", HANDSHAKE_PROTOCOL_VERSIONS)
def test_the_apps_add_only_meta_to_the_tools(send, version):
    opened = send(initialize(version, {"extensions": UI}), version=None)
    declaring = conversation(send, version, opened.headers["Mcp-Session-Id"])
    plain = conversation(send, version, None)
    assert declaring[0] == plain[0]  # ping
    listed = orjson.loads(declaring[1])
    for tool in listed["result"]["tools"]:
        tool.pop("_meta", None)
    assert orjson.dumps(listed) == plain[1]
    assert declaring[2:4] == plain[2:4]  # the tools' results are the same bytes


def test_a_request_without_the_session_is_a_client_that_declared_nothing(send):
    send(initialize("2025-11-25", {"extensions": UI}), version=None)
    assert b"_meta" not in send(rpc("tools/list")).data
    assert send(rpc("resources/list")).get_json()["error"]["code"] == -32601


def session_of(send) -> str:
    return send(initialize("2025-11-25", {"extensions": UI}), version=None
                ).headers["Mcp-Session-Id"]


def foreign(session: str) -> dict[str, str]:
    """Ids this installation did not sign, made from a valid one."""
    prefix, payload, mac = session.split(".")
    other_install = SessionIds(lambda: b"another installation's secret").issue
    flipped = "A" if mac[0] != "A" else "B"
    return {"tampered mac": f"{prefix}.{payload}.{flipped}{mac[1:]}",
            "tampered payload": f"{prefix}.{payload[:-2]}{mac[:2]}.{mac}",
            "another installation": other_install(Declaration(apps=True)),
            "truncated": f"{prefix}.{payload}", "not ours": "3f1c0e4a-uuid-of-another-server",
            "non-ascii mac": f"{prefix}.{payload}.{mac[:-1]}é", "huge": "e1." + "A" * 5000}


@pytest.mark.parametrize("kind", ["tampered mac", "tampered payload", "another installation",
                                  "truncated", "not ours", "non-ascii mac", "huge"])
def test_an_id_this_installation_did_not_sign_is_a_session_not_found(send, kind):
    session = session_of(send)
    assert b'"_meta"' in send(rpc("tools/list"), session=session).data  # the valid id works
    bad = foreign(session)[kind]
    for message in (rpc("tools/list"), call("query", QUERY), rpc("ping"),
                    {"jsonrpc": "2.0", "method": "notifications/initialized"}):
        refused = send(message, session=bad)
        assert refused.status_code == 404 and refused.mimetype == "application/json"
        assert refused.get_json() == {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600, "message": "Session not found: this Mcp-Session-Id was not issued "
                                       "by this server. Initialize again, without it."}}
    reopened = send(initialize("2025-11-25", {"extensions": UI}), version=None, session=bad)
    assert reopened.status_code == 200 and reopened.headers["Mcp-Session-Id"] != bad


def test_any_worker_reads_the_id_through_the_shared_secret(make_app, std_site, send):
    session = session_of(send)
    other = make_app()  # a process of its own: the secret is read from the database again
    assert "egis_instance_secrets" not in other.extensions
    response = other.test_client().post("/api/mcp", json=rpc("tools/list"), headers={
        **std_site.server_headers(), "Accept": ACCEPT, "MCP-Protocol-Version": "2025-11-25",
        "Mcp-Session-Id": session})
    assert b'"ui/resourceUri"' in response.data


def test_an_unknown_resource(send):
    session = session_of(send)
    error = send(rpc("resources/read", {"uri": "ui://egis/nope"}), session=session
                 ).get_json()["error"]
    assert error["code"] == -32602
    assert error["message"] == ('Unknown resource: "ui://egis/nope". This server has '
                                "ui://egis/query, ui://egis/funnel, ui://egis/retention, "
                                "ui://egis/paths.")


# --- the stateless era (2026-07-28) -----------------------------------------------------------

def modern(method: str, params: dict[str, Any] | None = None,
           capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    meta = {**MODERN_META, "io.modelcontextprotocol/clientCapabilities": capabilities or {}}
    return rpc(method, {**(params or {}), "_meta": meta})


def send_modern(send, method: str, params: dict[str, Any] | None = None,
                capabilities: dict[str, Any] | None = None, session: str | None = None):
    headers = {"Mcp-Method": method}
    if params and ("name" in params or "uri" in params):  # the ladder's name-bearing params
        headers["Mcp-Name"] = params.get("name", params.get("uri"))
    return send(modern(method, params, capabilities), version=MODERN, session=session,
                **headers)


def test_modern_a_request_that_declares_sees_the_apps(send):
    found = result(send_modern(send, "server/discover", capabilities={"extensions": UI}))
    assert found["capabilities"]["resources"] == {"listChanged": False}
    tools = result(send_modern(send, "tools/list", capabilities={"extensions": UI}))["tools"]
    assert {tool["name"]: tool["_meta"]["ui"]["resourceUri"] for tool in tools
            if "_meta" in tool} == APPS
    [app] = result(send_modern(send, "resources/read", {"uri": APPS["funnel"]},
                               {"extensions": UI}))["contents"]
    assert app["mimeType"] == MIME_TYPE
    self_contained(app["text"])
    listed = send_modern(send, "resources/list", capabilities={"extensions": UI})
    assert [r["uri"] for r in result(listed)["resources"]] == list(APPS.values())
    assert "Mcp-Session-Id" not in listed.headers  # this era has no sessions


@pytest.mark.parametrize("capabilities", NOT_DECLARING.values(), ids=NOT_DECLARING)
def test_modern_every_other_request_gets_the_answers_of_one_that_declared_nothing(
        send, capabilities):
    for method, params in (("server/discover", None), ("tools/list", None),
                           ("tools/call", {"name": "query", "arguments": QUERY}),
                           ("resources/list", None)):
        plain = send_modern(send, method, params)
        other = send_modern(send, method, params, capabilities)
        assert other.status_code == plain.status_code and other.data == plain.data, method
    assert b"ui://" not in send_modern(send, "tools/list").data
    refused = send_modern(send, "resources/read", {"uri": APPS["query"]})
    assert refused.status_code == 404 and refused.get_json()["error"]["code"] == -32601


def test_modern_a_session_header_means_nothing(send):
    declared = send_modern(send, "tools/list", capabilities={"extensions": UI})
    assert send_modern(send, "tools/list", capabilities={"extensions": UI},
                       session="not-an-egis-id").data == declared.data
    assert b"ui://" not in send_modern(send, "tools/list", session=session_of(send)).data
