"""Agent: the MCP endpoint's wire protocol and the analytics tool catalogue.

- protocol.py: JSON-RPC over Streamable HTTP, stateless, every MCP revision the SDK speaks
- sdk.py: the SDK's sans-IO request ladder, loaded without the SDK's client and server
- schemas.py: each tool's arguments and result as marshmallow schemas (the JSON Schemas agents see)
- text.py: the short text rendering of each tool's result
- tools.py: the catalogue (`TOOLS`) and the server that serves it (`MCP`)
"""
