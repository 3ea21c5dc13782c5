"""Agent: the MCP endpoint's wire protocol and the analytics tool catalogue.

- protocol.py: JSON-RPC over Streamable HTTP, stateless, every MCP revision the SDK speaks
- jsonrpc.py: the JSON-RPC error, its envelope, and request ids as the client wrote them
- batch.py: JSON-RPC batches: 100 members at most, each counted against the rate limit, one
  call's time limit and one tool-call slot for them all
- capacity.py: how many tool calls a worker process runs at once (half its threads)
- session.py: the signed Mcp-Session-Id that carries what a handshake-era client declared
- apps.py: the chart apps (MCP Apps) served as resources to the clients that declare them
- sdk.py: the SDK's sans-IO request ladder, loaded without the SDK's client and server
- schemas.py: each tool's arguments and result as marshmallow schemas (the JSON Schemas agents see)
- text.py: the short text rendering of each tool's result
- tools.py: the catalogue (`TOOLS`) and the server that serves it (`MCP`)
"""
