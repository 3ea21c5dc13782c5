"""What a worker imports for the agent endpoint, checked in a fresh interpreter.

The app does not import the agent layer (the first /api/mcp call does), and the agent layer does
not import the mcp SDK's client and server: app.agent.sdk loads the one module it needs apart
from the package (bench/README.md, "Memory per worker").
"""
from tests.fixtures.helpers import in_fresh_interpreter

FRESH_WORKER = """
import sys

import orjson

from app import create_app

create_app({"DATABASE_URL": "sqlite:///:memory:"})
imported_with_app = "app.agent.protocol" in sys.modules

from app.agent.tools import MCP

meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}
listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"}
listed = MCP.handle(orjson.dumps(listing), headers, None)
mismatched = MCP.handle(orjson.dumps(listing), {**headers, "mcp-method": "tools/call"}, None)
print(orjson.dumps({
    "imported_with_app": imported_with_app,
    "listed": [listed.status, len(listed.body["result"]["tools"])],
    "mismatched": [mismatched.status, mismatched.body["error"]["code"]],
    "sdk_packages": sorted({name.split(".")[0] for name in sys.modules} & {
        "mcp", "anyio", "httpx", "starlette", "uvicorn", "sse_starlette", "jwt"}),
}).decode())
"""


def test_the_agent_layer_loads_only_the_sdk_pieces_it_uses():
    report = in_fresh_interpreter(FRESH_WORKER)
    assert report["imported_with_app"] is False
    # The SDK's request ladder works as loaded: it answers, and it rejects a header that
    # contradicts the body with its own error code.
    assert report["listed"] == [200, 11]  # the read surface's 5 tools and the 6 reports
    assert report["mismatched"] == [400, -32020]
    assert report["sdk_packages"] == []
