"""POST /api/mcp: the agent endpoint, MCP over Streamable HTTP, with the analytics tools.

Only a server key of the site may call it (a write key gets 403, no key 401), and every tool
reads that key's site alone. The JSON-RPC layer is app.agent.protocol, the tool catalogue
app.agent.tools; the queries, and the definitions of visitor, session, bounce and the rest, are
app.analytics. This module is the route: key, rate limit, Accept check, and the answer.

The agent layer is imported on the first call, not with the app: it brings the mcp SDK's
protocol types and pydantic, 19 MiB of a worker's memory, which a worker that only ingests never
uses. That first call takes ~0.3 s longer (bench/README.md, "Memory per worker").
"""
from flask import Blueprint, Response, g, request
from marshmallow import EXCLUDE, Schema, fields, validate
from werkzeug.exceptions import RequestEntityTooLarge

from app.auth import require_key
from app.bodies import raw_body
from app.errors import MESSAGES, ApiError, render
from app.limits import MCP as MCP_LIMIT
from app.limits import limited
from app.openapi import documented
from models.api_key import SERVER

bp = Blueprint("mcp", __name__)


# A request's id: a string or a number (integral or not), answered as received. JSON-RPC 2.0
# allows null too; MCP does not, and such a request is refused (-32600).
REQUEST_ID = {"type": ["string", "number"]}


class JsonRpcRequestSchema(Schema):
    class Meta:
        unknown = EXCLUDE  # members JSON-RPC does not define are ignored

    jsonrpc = fields.String(required=True, validate=validate.Equal("2.0"))
    id = fields.Raw(metadata={**REQUEST_ID, "description": "Echoed in the answer as sent (7.0 "
                                                          "stays 7.0); absent for a "
                                                          "notification (answered 202)."})
    method = fields.String(required=True, metadata={
        "description": "initialize, ping, tools/list, tools/call, server/discover, "
                       "resources/list and resources/read (clients that declare the chart "
                       "apps), or a notification."})
    params = fields.Raw(metadata={
        "description": "The method's parameters (an object for every MCP method); a wrong "
                       "shape is a JSON-RPC error in the answer, as an unknown method is."})


class JsonRpcErrorObjectSchema(Schema):
    code = fields.Integer(required=True, metadata={
        "description": "-32700 parse error, -32600 invalid request, -32601 method not found, "
                       "-32602 invalid params, -32022 unsupported protocol version."})
    message = fields.String(required=True)
    data = fields.Raw()


class JsonRpcErrorSchema(Schema):
    jsonrpc = fields.String(required=True, validate=validate.Equal("2.0"))
    id = fields.Raw(required=True, metadata={
        "type": ["string", "number", "null"], "description": "The request's id as sent; null "
                                                            "when it could not be read."})
    error = fields.Nested(JsonRpcErrorObjectSchema, required=True)


class JsonRpcResultSchema(Schema):
    jsonrpc = fields.String(required=True, validate=validate.Equal("2.0"))
    id = fields.Raw(required=True, metadata=REQUEST_ID)
    result = fields.Dict(required=True, metadata={"description": "The method's MCP result."})


JSON_RPC_ANSWER = {"oneOf": [JsonRpcResultSchema, JsonRpcErrorSchema]}


def _accepts_json() -> bool:
    accept = request.headers.get("Accept")
    if not accept:
        return True
    types = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    return bool(types & {"application/json", "application/*", "*/*"})


@bp.post("/api/mcp")
@documented(
    "MCP endpoint for AI agents (Streamable HTTP, stateless, JSON responses)",
    body={"oneOf": [JsonRpcRequestSchema, {
        "type": "array", "minItems": 1, "description": "A JSON-RPC batch (protocols 2024-11-05 "
        "and 2025-03-26 only): each member is answered, an invalid one with an error."}]},
    responses={200: ({"oneOf": [*JSON_RPC_ANSWER["oneOf"],
                                {"type": "array", "items": JSON_RPC_ANSWER}]},
                     "A JSON-RPC response (or, protocols 2024-11-05 and 2025-03-26, a batch)."),
               202: (None, "A notification or response was accepted; no body."),
               400: ({"oneOf": [JsonRpcErrorSchema, "Error"]},
                     "Not JSON-RPC (a JSON-RPC error), or a body that could not be read."),
               401: (None, "Missing or invalid key."),
               403: (None, "Not a server key."),
               404: (JsonRpcErrorSchema, "JSON-RPC method not found (protocol 2026-07-28), "
                                         "or an Mcp-Session-Id this server did not issue."),
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
    from app.agent.tools import MCP

    headers = {name.lower(): value for name, value in request.headers.items()}
    reply = MCP.handle(raw_body(), headers, g.site)  # Mcp-Session-Id in, with the headers
    if reply.body is None:
        return Response(status=reply.status, headers=reply.headers)
    return Response(reply.content(), status=reply.status, mimetype="application/json",
                    headers=reply.headers)  # Mcp-Session-Id out, to a client that declared apps


# Rejections here are not ingest: answered as usual, but not tallied against the site's
# ingest health (app.errors tallies 400/413/429 for the ingest endpoints).
@bp.errorhandler(ApiError)
def _api_error(error: ApiError) -> Response:
    return render(error.status, error.message, error.headers, **error.extra)


@bp.errorhandler(RequestEntityTooLarge)
def _too_large(_error: RequestEntityTooLarge) -> Response:
    return render(413, MESSAGES[413])
