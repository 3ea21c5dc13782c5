"""JSON-RPC 2.0 pieces of the MCP endpoint: the error, its envelope, and the request id as the
client wrote it (app.agent.protocol answers with these)."""
import json
from typing import Any

import orjson
from mcp_types import METHOD_NOT_FOUND


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data

    def payload(self) -> dict[str, Any]:
        error = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def error_response(request_id: Any, error: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.payload()}


def valid_id(value: Any) -> bool:
    """An id is a string or a number (integral or not), echoed as received. JSON-RPC 2.0 allows
    null too, MCP does not ("the ID MUST NOT be null"): a request with it is invalid."""
    return isinstance(value, str | int | float | orjson.Fragment) and not isinstance(value, bool)


def ids_as_written(body: bytes, message: Any) -> Any:
    """`message` (one or a batch) with each id orjson read as a double replaced by the number
    as written (an orjson.Fragment, echoed verbatim), so the answer carries the same value: a
    double holds 0.1000000000000000000001 as 0.1 and 18446744073709551617 as 2^64.

    orjson cannot keep a number's text, so the body is read a second time, by the standard
    library, and only when an id is such a number; a body nested deeper than it reads keeps
    the doubles.
    """
    messages = message if isinstance(message, list) else [message]
    if not any(isinstance(item, dict) and isinstance(item.get("id"), float) for item in messages):
        return message
    try:
        written = json.loads(body, parse_float=orjson.Fragment, parse_int=orjson.Fragment)
    except RecursionError:
        return message
    for item, as_written in zip(messages, written if isinstance(written, list) else [written],
                                strict=True):
        if isinstance(item, dict) and isinstance(item.get("id"), float):
            item["id"] = as_written["id"]
    return message


def method_not_found(method: str, version: str | None = None) -> RpcError:
    """-32601, naming the method in JSON quotes: an empty or blank name reads as one."""
    revision = f" (protocol {version})" if version else ""
    return RpcError(METHOD_NOT_FOUND,
                    f"Method not found: {orjson.dumps(method).decode()}{revision}")
