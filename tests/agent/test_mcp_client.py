"""The agent endpoint through the official MCP Python SDK client, against a real server.

`mcp.client.streamable_http` + `ClientSession`: the handshake era (initialize), the stateless
era (server/discover), and the SDK's own auto negotiation. Every tool is called and its
structured result (which the client itself validates against the tool's outputSchema) is
compared with the figures tests/analytics/test_analytics.py computes from the seeded rows.
"""
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from tests.fixtures import mcp
from tests.fixtures.analytics import DOMAIN, PERIOD, Expected, check

server = mcp.server  # a fixture: a live server, seeded
pytestmark = pytest.mark.slow

TOOL_ARGUMENTS: dict[str, dict[str, Any]] = {
    "get_overview": {}, "get_revenue": {"limit": 100}, "get_web_vitals": {"limit": 3},
    "get_errors": {}, "get_crawler_activity": {}, "get_ingest_health": {},
}


def wanted(expected: Expected, name: str) -> dict[str, Any]:
    arguments = TOOL_ARGUMENTS[name]
    limit = arguments.get("limit", 10)
    return {
        "get_overview": expected.overview,
        "get_revenue": lambda: expected.revenue(limit),
        "get_web_vitals": lambda: expected.web_vitals(limit),
        "get_errors": lambda: expected.errors(limit),
        "get_crawler_activity": lambda: expected.crawler_activity(limit),
        "get_ingest_health": expected.ingest_health,
    }[name]()


def run(key: str, body: Callable[[Any], Awaitable[None]]) -> None:
    """Run `body(http_client)` with an httpx2 client that sends the key as a Bearer token."""

    async def main() -> None:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"},
                                      timeout=30) as http:
            await body(http)

    anyio.run(main)


async def call_every_tool(session: ClientSession, expected: Expected) -> None:
    listed = await session.list_tools()
    assert [tool.name for tool in listed.tools] == ["describe_data", "query", "funnel",
                                                    "retention", "paths", *TOOL_ARGUMENTS]
    for tool in listed.tools[5:]:  # the read tools: tests/agent/test_read_tools_client.py
        assert tool.input_schema["type"] == "object" and tool.output_schema
        result = await session.call_tool(tool.name, {**PERIOD, **TOOL_ARGUMENTS[tool.name]})
        assert result.is_error is False, result.content
        assert f"{DOMAIN}, {PERIOD['from']} to {PERIOD['to']}" in result.content[0].text
        check(result.structured_content, wanted(expected, tool.name))


async def tool_failures(session: ClientSession) -> None:
    failed = await session.call_tool("get_overview", {"from": "yesterday"})
    assert failed.is_error is True
    assert "from: Not a valid date." in failed.content[0].text
    with pytest.raises(MCPError) as raised:
        await session.call_tool("get_everything", {})
    assert raised.value.error.code == INVALID_PARAMS
    retired = await session.call_tool("get_top_pages", {"limit": 5})
    assert retired.is_error is True
    assert "Call the query tool with these arguments instead" in retired.content[0].text


def test_handshake_era(server):
    url, site_keys, expected = server

    async def body(http: httpx2.AsyncClient) -> None:
        async with streamable_http_client(url, http_client=http) as (read, write), \
                ClientSession(read, write) as session:
            initialized = await session.initialize()
            assert initialized.protocol_version == "2025-11-25"
            assert initialized.server_info.name == "egis"
            assert initialized.capabilities.tools is not None
            await session.send_ping()
            await call_every_tool(session, expected)
            await tool_failures(session)

    run(site_keys.server_key, body)


def test_stateless_era(server):
    url, site_keys, expected = server

    async def body(http: httpx2.AsyncClient) -> None:
        async with streamable_http_client(url, http_client=http) as (read, write), \
                ClientSession(read, write) as session:
            discovered = await session.discover()
            assert discovered.supported_versions == ["2026-07-28"]
            assert session.protocol_version == "2026-07-28"
            assert session.server_info is not None and session.server_info.name == "egis"
            await call_every_tool(session, expected)
            await tool_failures(session)

    run(site_keys.server_key, body)


def test_the_sdk_negotiates_by_itself(server):
    url, site_keys, expected = server

    async def body(http: httpx2.AsyncClient) -> None:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            assert client.protocol_version == "2026-07-28"
            result = await client.call_tool("get_overview", PERIOD)
            check(result.structured_content, expected.overview())
        async with Client(streamable_http_client(url, http_client=http),
                          mode="legacy") as client:
            assert client.protocol_version == "2025-11-25"
            result = await client.call_tool("get_errors", PERIOD)
            check(result.structured_content, expected.errors())

    run(site_keys.server_key, body)


def test_a_write_key_gets_no_session(server):
    url, site_keys, _ = server

    async def body(http: httpx2.AsyncClient) -> None:
        response = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                   headers={"Accept": "application/json, text/event-stream"})
        assert response.status_code == 403
        assert set(response.json()) == {"error"}
        async with streamable_http_client(url, http_client=http) as (read, write), \
                ClientSession(read, write) as session:
            with pytest.raises(MCPError):
                await session.initialize()

    run(site_keys.write_key, body)
