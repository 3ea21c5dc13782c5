"""The chart apps through the official MCP Python SDK client, against a real server.

A client that does not declare the extension (the SDK's default) is given no Mcp-Session-Id and
sends none, no GET stream and no DELETE: its exchange is the one it had before the apps. A client
that declares it (`advertise`, the SDK's way of declaring an extension) gets the signed session,
sends it back, sees `_meta.ui` and reads the apps; the GET stream and the DELETE a session makes
the SDK send are answered 405, which the SDK takes as "not offered".
"""
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.extension import advertise
from mcp.client.streamable_http import streamable_http_client

from app.agent.apps import EXTENSION, MIME_TYPE
from tests.fixtures import mcp
from tests.fixtures.analytics import PERIOD

server = mcp.server  # a fixture: a live server, seeded
pytestmark = pytest.mark.slow

DECLARE = advertise(EXTENSION, {"mimeTypes": [MIME_TYPE]})
APPS = {"query": "ui://egis/query", "funnel": "ui://egis/funnel",
        "retention": "ui://egis/retention", "paths": "ui://egis/paths"}


class Recorder:
    """Every HTTP exchange of the client: (method, request's session id, answer's session id,
    status)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, str | None, int]] = []

    async def response(self, response: httpx2.Response) -> None:
        self.seen.append((response.request.method, response.request.headers.get("mcp-session-id"),
                          response.headers.get("mcp-session-id"), response.status_code))


async def session_of(url: str, key: str, mode: str, extensions: list[Any],
                     recorder: Recorder) -> dict[str, Any]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30,
                              event_hooks={"response": [recorder.response]})
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode,
                            extensions=extensions) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        answer = await client.call_tool("query", {**PERIOD, "metrics": ["visitors"]})
        apps = {}
        for name, uri in APPS.items() if extensions else ():
            apps[name] = (await client.read_resource(uri)).contents[0]
        return {"version": client.protocol_version, "tools": tools, "query": answer,
                "apps": apps}


def run(body: Any) -> dict[str, Any]:
    return anyio.run(body)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_client_that_does_not_declare_gets_no_session(server, mode):
    url, site_keys, _ = server
    recorder = Recorder()
    seen = run(lambda: session_of(url, site_keys.server_key, mode, [], recorder))
    assert seen["version"] == ("2025-11-25" if mode == "legacy" else "2026-07-28")
    assert all(tool.meta is None for tool in seen["tools"].values())
    assert seen["query"].is_error is False and seen["query"].structured_content["totals"]
    assert recorder.seen and all(method == "POST" and sent is None and answered is None
                                 for method, sent, answered, _ in recorder.seen)


def test_a_declaring_client_of_the_handshake_era_keeps_its_session(server):
    url, site_keys, _ = server
    recorder = Recorder()
    declaring = run(lambda: session_of(url, site_keys.server_key, "legacy", [DECLARE], recorder))
    plain = run(lambda: session_of(url, site_keys.server_key, "legacy", [], Recorder()))
    assert declaring["version"] == "2025-11-25"
    [session] = {answered for _, _, answered, _ in recorder.seen if answered}
    later = [(method, sent, status) for method, sent, _, status in recorder.seen[1:]]
    assert all(sent == session for _, sent, _ in later)  # every later request carries it
    assert {(method, status) for method, _, status in later} <= {
        ("POST", 200), ("POST", 202), ("GET", 405), ("DELETE", 405)}
    assert ("DELETE", session, 405) in later  # the SDK's goodbye, refused as not offered
    for name, uri in APPS.items():
        assert declaring["tools"][name].meta == {"ui": {"resourceUri": uri},
                                                 "ui/resourceUri": uri}
        assert declaring["apps"][name].mime_type == MIME_TYPE
        assert declaring["apps"][name].text.startswith("<!doctype html>")
    assert declaring["query"].structured_content == plain["query"].structured_content


def test_a_declaring_client_of_the_stateless_era(server):
    url, site_keys, _ = server
    recorder = Recorder()
    declaring = run(lambda: session_of(url, site_keys.server_key, "auto", [DECLARE], recorder))
    assert declaring["version"] == "2026-07-28"
    assert declaring["tools"]["funnel"].meta["ui"] == {"resourceUri": APPS["funnel"]}
    assert declaring["apps"]["query"].mime_type == MIME_TYPE
    assert all(method == "POST" and answered is None for method, _, answered, _ in recorder.seen)
