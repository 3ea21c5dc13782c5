"""POST /api/mcp: the agent endpoint, MCP over Streamable HTTP, with the analytics tools.

An agent calls it with a read key or a server key of the site, or with an OAuth access token
(app.oauth): a write key gets 403; no credentials, or credentials that are unknown, expired or
revoked, get 401 with the challenge that tells an OAuth client where to get a token (RFC 9728).
Every tool reads that key's or that grant's site alone.

The JSON-RPC layer is app.agent.protocol, the tool catalogue
app.agent.tools; the queries, and the definitions of visitor, session, bounce and the rest, are
app.analytics. This module is the route: key, rate limit, Accept check, and the answer.

The agent layer is imported on the first call, not with the app: it brings the mcp SDK's
protocol types and pydantic, 19 MiB of a worker's memory, which a worker that only ingests never
uses. That first call takes ~0.3 s longer (bench/README.md, "Memory per worker").
"""
from typing import Any

from flask import Blueprint, Response, g, request
from marshmallow import EXCLUDE, Schema, fields, validate
from werkzeug.exceptions import RequestEntityTooLarge

from app.access.auth import require_credentials
from app.oauth import public
from app.oauth.tokens import ACCESS_TOKENS
from app.storage import deadline
from app.storage.db import reads_without_primary
from app.web.bodies import raw_body
from app.web.errors import MESSAGES, ApiError, render
from app.web.limits import MCP as MCP_LIMIT
from app.web.limits import count_again, limited
from app.web.openapi import documented
from models.api_key import READ, SERVER

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
                       "-32602 invalid params, -32022 unsupported protocol version, -32029 a "
                       "batch member over the rate limit (data.retryAfter: seconds)."})
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
        "type": "array", "minItems": 1, "maxItems": 100, "description": "A JSON-RPC batch "
        "(protocols 2024-11-05 and 2025-03-26 only): each member is answered, an invalid one "
        "with an error; each counts against the rate limit, and its tool calls share one "
        "call's time limit."}]},
    responses={200: ({"oneOf": [*JSON_RPC_ANSWER["oneOf"],
                                {"type": "array", "items": JSON_RPC_ANSWER}]},
                     "A JSON-RPC response (or, protocols 2024-11-05 and 2025-03-26, a batch)."),
               202: (None, "A notification or response was accepted; no body."),
               400: ({"oneOf": [JsonRpcErrorSchema, "Error"]},
                     "Not JSON-RPC, or a batch of over 100 members (a JSON-RPC error), or a "
                     "body that could not be read."),
               401: (None, "Missing or invalid key or access token; WWW-Authenticate says "
                           "where to get a token (RFC 9728)."),
               403: (None, "A write key: agents use a read key, a server key or OAuth."),
               404: (JsonRpcErrorSchema, "JSON-RPC method not found (protocol 2026-07-28), "
                                         "or an Mcp-Session-Id this server did not issue."),
               405: (None, "Only POST."), 406: (None, "The client does not accept JSON."),
               413: (None, "Body too large."), 415: (None, "Not JSON."),
               429: (None, "Rate limited.")},
    tags=("agents",),
    security=[{"bearerKey": []}, {"oauth2": [public.SCOPE]}],
    schemes={"oauth2": public.OPENAPI_SCHEME},
)
@require_credentials((SERVER, READ), ACCESS_TOKENS)
@limited(MCP_LIMIT)
@deadline.longer_by("AGENT_QUERY_SECONDS")
@reads_without_primary
def mcp_endpoint() -> Response:
    if not _accepts_json():
        raise ApiError(406, "This endpoint answers application/json: accept it "
                            "(Accept: application/json, text/event-stream).")
    from app.agent.batch import rate_limited
    from app.agent.tools import MCP

    def admit() -> Any:  # a batch's next member counts as a request (app.agent.batch)
        exceeded = count_again(MCP_LIMIT)
        return None if exceeded is None else rate_limited(exceeded.item, exceeded.retry_after)

    headers = {name.lower(): value for name, value in request.headers.items()}
    reply = MCP.handle(raw_body(), headers, g.site, admit)  # Mcp-Session-Id in, with headers
    if reply.body is None:
        return Response(status=reply.status, headers=reply.headers)
    return Response(reply.content(), status=reply.status, mimetype="application/json",
                    headers=reply.headers)  # Mcp-Session-Id out, to a client that declared apps


# Rejections here are not ingest: answered as usual, but not tallied against the site's
# ingest health (app.web.errors tallies 400/413/429 for the ingest endpoints).
@bp.errorhandler(ApiError)
def _api_error(error: ApiError) -> Response:
    return render(error.status, error.message, error.headers, **error.extra)


@bp.errorhandler(RequestEntityTooLarge)
def _too_large(_error: RequestEntityTooLarge) -> Response:
    return render(413, MESSAGES[413])
