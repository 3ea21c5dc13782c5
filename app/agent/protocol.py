"""The Model Context Protocol over Streamable HTTP, stateless, JSON responses only.

A sans-IO layer: `McpServer.handle(body, headers, context)` takes one POST's bytes and headers
and returns the HTTP status and JSON to answer; the Flask view around it only authenticates.

Why not the SDK's server: mcp 2.3.0 serves Streamable HTTP as an ASGI app (Starlette, anyio task
groups, a lifespan-managed session manager). Mounting that inside this WSGI app (gunicorn sync
workers, the shared key decorator, a Peewee connection per request) would take an ASGI-to-WSGI
bridge and an event loop per request, for a surface this small: initialize, ping, tools/list,
tools/call, server/discover. So this module speaks JSON-RPC itself, and borrows the SDK's sans-IO
pieces so that the wire is what the SDK's own client expects: the protocol-version registry
(mcp_types.version), the per-revision request validators and result serializers
(mcp_types.methods), and the 2026-07-28 request ladder with its error-to-HTTP-status table
(mcp.shared.inbound, loaded by app.agent.sdk without the SDK's client and server). The tests
drive this endpoint with the SDK's streamable HTTP client.

Protocol revisions: every revision the SDK speaks.
- 2024-11-05 ... 2025-11-25 (handshake era): `initialize` negotiates (the client's version when
  known, else the newest); later requests carry MCP-Protocol-Version (absent: 2025-03-26, as the
  transport spec says). Stateless: nothing is remembered between requests and
  `notifications/initialized` is acknowledged (202) and dropped. A client that declares the chart
  apps gets an Mcp-Session-Id that holds its declaration, signed (app.agent.session); any other
  client gets none. A request whose Mcp-Session-Id this installation did not sign is answered 404
  (the transport spec's answer for a session the server does not know: the client initializes
  again and gets a valid id), not served as if the client had declared nothing, which would take
  the charts away in mid-conversation from a host that still holds the tools' `_meta.ui`.
- 2026-07-28 (stateless era): no handshake; every request carries its version and capabilities in
  params._meta plus the MCP-Protocol-Version and Mcp-Method headers, checked by the SDK's ladder;
  `server/discover` describes the server; `ping` no longer exists.
The chart apps (app.agent.apps): a client that declared them (in `initialize`, or in a 2026-07-28
request's `_meta`) sees `_meta.ui` on the tools that have one, the `resources` capability, and
`resources/list`, `resources/templates/list` and `resources/read`; for any other client these
methods do not exist and every answer is what it was before the apps.
Routing follows the SDK's server: a handshake-era (or no) version header takes the handshake
path, a 2026-07-28 header (or a body carrying the 2026 envelope) the stateless path; any other
header value is answered -32022 (unsupported protocol version) with the versions served.

JSON-RPC batches (arrays) are accepted only where the revision had them (2024-11-05 and
2025-03-26, i.e. also when no version header is sent); 2025-06-18 removed batching, so from then
on an array is an invalid request; a batch's size, rate limit and time: app.agent.batch.
Errors: -32700 parse error, -32600 invalid request, -32601 method not found, -32602 invalid
params (also an unknown tool name), -32022 unsupported version, -32029 a batch member over the
rate limit.
A tool that fails (bad arguments, impossible period) answers a result with isError: true and a
readable text, which the model can act on. HTTP status: on the 2026-07-28 path the SDK's table
(400 for most errors, 404 for an unknown method); on the handshake path 400 for a body that is
not JSON-RPC and 200 for errors about a well-formed request, as the SDK's transport does.
"""
import dataclasses
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from mcp_types import methods as mcp_methods
from mcp_types.version import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    MODERN_PROTOCOL_VERSIONS,
)
from pydantic import ValidationError

from app.agent import apps as chart_apps
from app.agent import batch as batches
from app.agent.jsonrpc import (
    RpcError,
    error_response,
    ids_as_written,
    method_not_found,
    valid_id,
)
from app.agent.sdk import inbound
from app.agent.session import HEADER as SESSION_HEADER
from app.agent.session import NOTHING_DECLARED, Declaration, SessionIds, session_secret
from app.agent.session import RESPONSE_HEADER as SESSION_RESPONSE_HEADER

log = logging.getLogger(__name__)

SERVED_VERSIONS = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
BATCHING_VERSIONS = frozenset({"2024-11-05", "2025-03-26"})
# structuredContent arrived in 2025-06-18; older clients read the JSON from a text block.
STRUCTURED_CONTENT_VERSIONS = frozenset(SERVED_VERSIONS) - BATCHING_VERSIONS
LIST_CACHE_HINT = {"ttlMs": 3_600_000, "cacheScope": "private"}  # 2026-07-28 cacheable results
TOP_LEVEL_TITLE_VERSION = "2025-06-18"  # Tool.title; before it, only annotations.title


class ToolError(Exception):
    """A tool call that cannot be answered; the message goes to the model as an isError result."""


@dataclass(frozen=True)
class ToolOutput:
    structured: dict[str, Any]
    text: str


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    # (context, arguments) -> output; raises ToolError for a failure the model should see
    handler: Callable[[Any, dict[str, Any]], ToolOutput]
    listed: bool = True  # False: callable, not in tools/list (a retired tool's sentence)

    def listing(self, version: str) -> dict[str, Any]:
        """The tool as tools/list shows it to a client of protocol `version`. Every conversation
        reads the catalogue first, so nothing is said twice: the display title is in
        annotations only for the revisions before 2025-06-18, which have no top-level title;
        idempotentHint is left out, the spec giving it a meaning only without readOnlyHint."""
        annotations: dict[str, Any] = {"readOnlyHint": True, "openWorldHint": False}
        if version < TOP_LEVEL_TITLE_VERSION:
            annotations = {"title": self.title, **annotations}
        return {"name": self.name, "title": self.title, "description": self.description,
                "inputSchema": self.input_schema, "outputSchema": self.output_schema,
                "annotations": annotations}


@dataclass(frozen=True)
class Reply:
    status: int
    body: Any = None  # JSON value; None: no body (202)
    headers: dict[str, str] = field(default_factory=dict)

    def content(self) -> bytes:
        return b"" if self.body is None else orjson.dumps(self.body)


@dataclass(frozen=True)
class _Era:
    modern: bool
    version: str | None  # the header's version (handshake era; None when absent)
    # handshake era: what the client declared in initialize, read from its signed session id
    declared: Declaration = NOTHING_DECLARED

    def status(self, code: int) -> int:
        if self.modern:
            return inbound.ERROR_CODE_HTTP_STATUS.get(code, 200)
        return 400 if code in (PARSE_ERROR, INVALID_REQUEST) else 200


def _first_problem(error: ValidationError) -> str:
    problem = error.errors()[0]
    where = ".".join(str(part) for part in problem["loc"] if part not in ("params",))
    return f"{where}: {problem['msg']}" if where else problem["msg"]


class McpServer:
    def __init__(self, name: str, version: str, title: str, instructions: str,
                 tools: list[Tool], sessions: SessionIds | None = None) -> None:
        self.info = {"name": name, "title": title, "version": version}
        self.instructions = instructions
        self.tools = {tool.name: tool for tool in tools}
        self.sessions = sessions or SessionIds(session_secret)

    # --- transport --------------------------------------------------------------------

    def handle(self, body: bytes, headers: Mapping[str, str], context: Any,
               admit: batches.Admit | None = None) -> Reply:
        """Answer one POST. `headers` must be keyed by lower-case names; `admit` counts each
        member of a batch after the first against the rate limit (app.agent.batch)."""
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError:
            return Reply(400, error_response(None, RpcError(
                PARSE_ERROR, "Parse error: the body is not valid JSON.")))
        message = ids_as_written(body, message)
        header = headers.get(inbound.MCP_PROTOCOL_VERSION_HEADER)
        if header is not None and header not in SERVED_VERSIONS:
            error = RpcError(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                             {"supported": list(SERVED_VERSIONS), "requested": header})
            return Reply(400, error_response(None, error))
        era = _Era(modern=header in MODERN_PROTOCOL_VERSIONS or (
            header is None and _has_modern_envelope(message)), version=header)
        initialize = isinstance(message, dict) and message.get("method") == "initialize"
        session_id = headers.get(SESSION_HEADER)
        if session_id is not None and not era.modern and not initialize:
            declared = self.sessions.read(session_id)
            if declared is None:  # the transport spec's answer to a session it does not know
                return Reply(404, error_response(None, RpcError(
                    INVALID_REQUEST, "Session not found: this Mcp-Session-Id was not issued by "
                                     "this server. Initialize again, without it.")))
            era = dataclasses.replace(era, declared=declared)
        if isinstance(message, list):
            return self._batch(message, era, headers, context, admit)
        request_id, answer = self._message(message, era, headers, context)
        if answer is None:
            return Reply(202)
        if isinstance(answer, RpcError):
            return Reply(era.status(answer.code), error_response(request_id, answer))
        reply = Reply(200, {"jsonrpc": "2.0", "id": request_id, "result": answer})
        declared = (_declared_in(message.get("params")) if initialize and not era.modern
                    else NOTHING_DECLARED)
        if declared.apps:
            reply.headers[SESSION_RESPONSE_HEADER] = self.sessions.issue(declared)
        return reply

    def _batch(self, messages: list[Any], era: _Era, headers: Mapping[str, str],
               context: Any, admit: batches.Admit | None) -> Reply:
        version = era.version or DEFAULT_NEGOTIATED_VERSION
        if era.modern or version not in BATCHING_VERSIONS:
            error = RpcError(INVALID_REQUEST, f"Invalid request: protocol revision {version} has "
                                              "no JSON-RPC batches; send one message per POST.")
            return Reply(400, error_response(None, error))
        if not messages:
            return Reply(400, error_response(None, RpcError(INVALID_REQUEST,
                                                            "Invalid request: empty batch.")))
        too_large = batches.too_large(len(messages))
        if too_large is not None:
            return Reply(400, error_response(None, too_large))
        replies = batches.answer_members(
            messages, lambda message: self._member(message, era, headers, context), admit)
        return Reply(200, replies) if replies else Reply(202)

    def _member(self, message: Any, era: _Era, headers: Mapping[str, str],
                context: Any) -> dict[str, Any] | None:
        """A batch member's reply; None for a member owed no answer."""
        if isinstance(message, dict) and message.get("method") == "initialize":
            answer: Any = RpcError(INVALID_REQUEST, "Invalid request: initialize must not "
                                                    "be part of a batch.")
            request_id = message.get("id") if valid_id(message.get("id")) else None
        else:
            request_id, answer = self._message(message, era, headers, context)
        if isinstance(answer, RpcError):
            return error_response(request_id, answer)
        return None if answer is None else {"jsonrpc": "2.0", "id": request_id, "result": answer}

    def _message(self, message: Any, era: _Era, headers: Mapping[str, str],
                 context: Any) -> tuple[Any, dict[str, Any] | RpcError | None]:
        """(id, result or error), or (None, None) for a message owed no response."""
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return None, RpcError(INVALID_REQUEST, "Invalid request: expected a JSON-RPC 2.0 "
                                                   "object.")
        request_id = message.get("id")
        if "method" not in message and ("result" in message or "error" in message):
            # A response from the client: this server never sends requests, so nothing awaits
            # it; the handshake-era transport accepts it (202), the stateless one refuses it.
            return (None, RpcError(INVALID_REQUEST, "Invalid request: this server sends no "
                                                    "requests to answer.")) if era.modern \
                else (None, None)
        method = message.get("method")
        has_id = "id" in message
        if not isinstance(method, str) or (has_id and not valid_id(request_id)):
            return (request_id if valid_id(request_id) else None,
                    RpcError(INVALID_REQUEST, "Invalid request: `method` must be a string and "
                                              "`id` a string or a number (not null)."))
        if not has_id:
            return None, None  # a notification: acknowledged, nothing to act on statelessly
        params = message.get("params")
        try:
            if era.modern:
                return request_id, self._modern(message, method, params, headers, context)
            return request_id, self._handshake(method, params, era, context)
        except RpcError as error:
            return request_id, error

    # --- the two eras -----------------------------------------------------------------

    def _handshake(self, method: str, params: Any, era: _Era, context: Any) -> dict[str, Any]:
        if method == "initialize":
            requested = params.get("protocolVersion") if isinstance(params, dict) else None
            version = (requested if requested in HANDSHAKE_PROTOCOL_VERSIONS
                       else LATEST_HANDSHAKE_VERSION)
            self._validate(method, version, params)
            declared = _declared_in(params)
            return self._serialize(method, version, {
                "protocolVersion": version, "capabilities": self._capabilities(declared),
                "serverInfo": self.info, "instructions": self.instructions})
        version = era.version or DEFAULT_NEGOTIATED_VERSION
        handlers = {"ping": lambda: {},
                    "tools/list": lambda: self._list_tools(era.declared, version),
                    "tools/call": lambda: self._call_tool(params, version, context),
                    **self._resource_handlers(era.declared, params)}
        if method not in handlers:
            raise method_not_found(method)
        self._validate(method, version, params)
        return self._serialize(method, version, handlers[method]())

    def _modern(self, message: dict[str, Any], method: str, params: Any,
                headers: Mapping[str, str], context: Any) -> dict[str, Any]:
        verdict = inbound.classify_inbound_request(message, headers=headers)
        if isinstance(verdict, inbound.InboundLadderRejection):
            raise RpcError(verdict.code, verdict.message, verdict.data)
        version = verdict.protocol_version
        declared = Declaration(apps=chart_apps.declares_apps(verdict.client_capabilities))
        handlers = {"server/discover": lambda: self._discover(declared),
                    "tools/list": lambda: self._list_tools(declared, version),
                    "tools/call": lambda: self._call_tool(params, version, context),
                    **self._resource_handlers(declared, params)}
        if method not in handlers:
            raise method_not_found(method)
        self._validate(method, version, params)
        result = handlers[method]()
        if method in mcp_methods.CACHEABLE_METHODS:
            result = {**LIST_CACHE_HINT, **result}
        result = {**result, "resultType": "complete",
                  "_meta": {SERVER_INFO_META_KEY: self.info}}
        return self._serialize(method, version, result)

    # --- methods ----------------------------------------------------------------------

    def _capabilities(self, declared: Declaration) -> dict[str, Any]:
        if not declared.apps:
            return {"tools": {"listChanged": False}}
        return {"tools": {"listChanged": False}, "resources": {"listChanged": False},
                "extensions": {chart_apps.EXTENSION: {}}}

    def _discover(self, declared: Declaration) -> dict[str, Any]:
        return {"supportedVersions": list(MODERN_PROTOCOL_VERSIONS),
                "capabilities": self._capabilities(declared), "instructions": self.instructions}

    def _list_tools(self, declared: Declaration, version: str) -> dict[str, Any]:
        """The catalogue; a client that declared the chart apps also sees which tool has one
        (`_meta`, added here by tool name so that the catalogue stays one definition)."""
        listed = []
        for tool in filter(lambda tool: tool.listed, self.tools.values()):
            listing = tool.listing(version)
            meta = chart_apps.tool_meta(tool.name) if declared.apps else None
            listed.append({**listing, "_meta": meta} if meta else listing)
        return {"tools": listed}

    @staticmethod
    def _resource_handlers(declared: Declaration,
                           params: Any) -> dict[str, Callable[[], dict[str, Any]]]:
        """resources/* for a client that declared the chart apps; for any other, these methods
        do not exist (-32601), as before the apps."""
        if not declared.apps:
            return {}
        return {"resources/list": lambda: {"resources": [
                    app.listing() for app in chart_apps.APPS.values()]},
                "resources/templates/list": lambda: {"resourceTemplates": []},
                "resources/read": lambda: _read_resource(params)}

    def _call_tool(self, params: dict[str, Any], version: str, context: Any) -> dict[str, Any]:
        tool = self.tools.get(params["name"])
        if tool is None:
            raise RpcError(INVALID_PARAMS, f"Unknown tool: {params['name']}. Call tools/list "
                                           "for the tools this server has.")
        try:
            output = tool.handler(context, params.get("arguments") or {})
        except ToolError as error:
            return {"content": [{"type": "text", "text": str(error)}], "isError": True}
        content = [{"type": "text", "text": output.text}]
        if version not in STRUCTURED_CONTENT_VERSIONS:
            content.append({"type": "text", "text": orjson.dumps(output.structured).decode()})
        return {"content": content, "structuredContent": output.structured, "isError": False}

    # --- the SDK's per-revision schemas ---------------------------------------------------

    @staticmethod
    def _validate(method: str, version: str, params: Any) -> None:
        try:
            mcp_methods.validate_client_request(method, version, params)
        except KeyError:
            raise method_not_found(method, version) from None
        except ValidationError as error:
            raise RpcError(INVALID_PARAMS,
                           f"Invalid params for {method}: {_first_problem(error)}") from None

    @staticmethod
    def _serialize(method: str, version: str, result: dict[str, Any]) -> dict[str, Any]:
        try:
            return mcp_methods.serialize_server_result(method, version, result)
        except ValidationError:
            log.exception("the %s result does not match protocol %s", method, version)
            raise RpcError(INTERNAL_ERROR, "Internal error: the server built an invalid "
                                           "result.") from None


def _declared_in(params: Any) -> Declaration:
    """What an initialize request's params declare (their capabilities)."""
    capabilities = params.get("capabilities") if isinstance(params, dict) else None
    return Declaration(apps=chart_apps.declares_apps(capabilities))


def _read_resource(params: dict[str, Any]) -> dict[str, Any]:
    app = chart_apps.APPS.get(params["uri"])
    if app is None:
        raise RpcError(INVALID_PARAMS, f"Unknown resource: {orjson.dumps(params['uri']).decode()}."
                                       f" This server has {', '.join(chart_apps.APPS)}.")
    return {"contents": [app.contents()]}


def _has_modern_envelope(message: Any) -> bool:
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta
