"""POST /api/mcp: the agent endpoint, MCP over Streamable HTTP, with the analytics tools.

Only a server key of the site may call it (a write key gets 403, no key 401), and every tool
reads that key's site alone. The JSON-RPC layer is app.agent.protocol, the tool catalogue
app.agent.tools; the queries, and the definitions of visitor, session, bounce and the rest, are
app.analytics. This module is the route: key, rate limit, Accept check, and the answer.
"""
from flask import Blueprint, Response, g, request
from marshmallow import Schema, fields, validate
from werkzeug.exceptions import RequestEntityTooLarge

from app.agent.tools import MCP
from app.auth import require_key
from app.bodies import raw_body
from app.errors import MESSAGES, ApiError, render
from app.limits import MCP as MCP_LIMIT
from app.limits import limited
from app.openapi import documented
from models.api_key import SERVER

bp = Blueprint("mcp", __name__)


class JsonRpcRequestSchema(Schema):
    jsonrpc = fields.String(required=True, validate=validate.Equal("2.0"))
    id = fields.Raw(metadata={"description": "String or integer; absent for a notification."})
    method = fields.String(required=True, metadata={
        "description": "initialize, ping, tools/list, tools/call, server/discover, or a "
                       "notification."})
    params = fields.Dict()


def _accepts_json() -> bool:
    accept = request.headers.get("Accept")
    if not accept:
        return True
    types = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    return bool(types & {"application/json", "application/*", "*/*"})


@bp.post("/api/mcp")
@documented(
    "MCP endpoint for AI agents (Streamable HTTP, stateless, JSON responses)",
    body=JsonRpcRequestSchema,
    responses={200: (None, "A JSON-RPC response (or a batch of them)."),
               202: (None, "A notification or response was accepted; no body."),
               400: (None, "Not JSON-RPC, or a JSON-RPC error with an HTTP 400 status."),
               401: (None, "Missing or invalid key."),
               403: (None, "Not a server key."),
               404: (None, "JSON-RPC method not found (protocol 2026-07-28)."),
               405: (None, "Only POST."), 406: (None, "The client does not accept JSON."),
               413: (None, "Body too large."), 415: (None, "Not JSON."),
               429: (None, "Rate limited.")},
    tags=("agents",),
)
@require_key(SERVER)
@limited(MCP_LIMIT)
def mcp_endpoint() -> Response:
    if not _accepts_json():
        raise ApiError(406, "This endpoint answers application/json: accept it "
                            "(Accept: application/json, text/event-stream).")
    headers = {name.lower(): value for name, value in request.headers.items()}
    reply = MCP.handle(raw_body(), headers, g.site)
    if reply.body is None:
        return Response(status=reply.status)
    return Response(reply.content(), status=reply.status, mimetype="application/json")


# Rejections here are not ingest: answered as usual, but not tallied against the site's
# ingest health (app.errors tallies 400/413/429 for the ingest endpoints).
@bp.errorhandler(ApiError)
def _api_error(error: ApiError) -> Response:
    return render(error.status, error.message, error.headers, **error.extra)


@bp.errorhandler(RequestEntityTooLarge)
def _too_large(_error: RequestEntityTooLarge) -> Response:
    return render(413, MESSAGES[413])
