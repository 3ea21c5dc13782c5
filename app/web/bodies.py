"""Reading request bodies: content type, gzip with a decoded-size cap, strict JSON.

orjson is the parser on purpose: it rejects NaN/Infinity, lone surrogates and nesting deeper
than 1024 levels by itself, and it is several times faster than the standard library.
"""
import json
import math
import time
import zlib
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

import orjson
from flask import current_app, request
from werkzeug.wsgi import ClosingIterator

from app.web.errors import ApiError
from models.ingest_tally import REJECTED_400, REJECTED_413

GZIP_WINDOW = 16 + zlib.MAX_WBITS  # expect a gzip header
# A body refused before it was read is read to its end after the answer, if it is at most this
# large (nginx passes at most 2 MiB: deploy/nginx.conf) and arrives within this time.
DRAIN_MAX_BYTES = 4 * 1024 * 1024
DRAIN_SECONDS = 2.0
DRAIN_CHUNK = 64 * 1024


def _too_large(limit: int) -> ApiError:
    return ApiError(413, f"The request body is larger than {limit} bytes (after gzip decoding).",
                    tally_reason=REJECTED_413)


def _malformed(message: str) -> ApiError:
    return ApiError(400, message, tally_reason=REJECTED_400)


def raw_body() -> bytes:
    """The request body, gunzipped when Content-Encoding says so, at most MAX_BODY_BYTES."""
    mimetype = request.mimetype
    if mimetype != "application/json" and not mimetype.endswith("+json"):
        raise ApiError(415, "The request body must be JSON: send Content-Type: application/json.")
    limit = current_app.config["MAX_BODY_BYTES"]
    # Werkzeug answers 413 when Content-Length is over its maximum, but a chunked body (no
    # Content-Length) is silently cut at that maximum: read one byte more to tell the two apart.
    request.max_content_length = limit + 1
    body = request.get_data(cache=False)
    if len(body) > limit:
        raise _too_large(limit)
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding != "gzip":
        raise ApiError(415, f"Unsupported Content-Encoding {encoding!r}: use gzip or none.")
    return gunzip(body, limit)


def gunzip(body: bytes, limit: int) -> bytes:
    """Decode at most `limit` bytes: a gzip bomb is stopped after `limit`, not after inflating."""
    decoder = zlib.decompressobj(GZIP_WINDOW)
    try:
        data = decoder.decompress(body, limit + 1)
    except zlib.error as error:
        raise _malformed(f"The gzip body could not be decoded: {error}.") from None
    if len(data) > limit:
        raise _too_large(limit)
    if not decoder.eof:
        raise _malformed("The gzip body is truncated.")
    return data


def _require_object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _malformed(f"The request body must be a JSON object, not {json_type(value)}.")
    return value


def json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
             type(None): "null", int: "a number", float: "a number", Decimal: "a number"}
    return names.get(type(value), type(value).__name__)


def json_object(body: bytes) -> dict[str, Any]:
    """Parse a JSON object strictly (floats as float)."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        field = _field_beyond_double(body) if error.msg == ORJSON_INFINITE_NUMBER else None
        if field is not None:
            raise _malformed(f"{field}: {NUMBER_TOO_LARGE}") from None
        raise _malformed(f"The request body is not valid JSON: {error.msg}.") from None
    return _require_object(value)


ORJSON_INFINITE_NUMBER = "number is infinity when parsed as double"
NUMBER_TOO_LARGE = "Number too large: a JSON number here must fit a double (about ±1.8e308)."


def _field_beyond_double(body: bytes) -> str | None:
    """The path (`events.0.timestamp`) of the first number in `body` that no double can hold.

    `1e400` is valid JSON that orjson refuses as a whole; reading the text again exactly finds
    the field to name. None when the text has other faults the exact reading does not pass.
    """
    try:
        value = json.loads(body, parse_float=Decimal, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return None
    pending: list[tuple[str, Any]] = [("", value)]
    while pending:
        path, item = pending.pop()
        if isinstance(item, (dict, list)):
            children = item.items() if isinstance(item, dict) else enumerate(item)
            pending.extend(reversed([(f"{path}.{key}" if path else str(key), child)
                                     for key, child in children]))
        elif path and _beyond_double(item):
            return path
    return None


def _beyond_double(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
        return False
    try:
        return math.isinf(float(value))
    except OverflowError:  # an int too large for float()
        return True


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def json_object_exact(body: bytes) -> dict[str, Any]:
    """Parse a JSON object with every non-integer number as Decimal, for money.

    orjson validates first (strictness, depth, surrogates); the standard library then re-reads
    the same text so that 19.99 becomes Decimal("19.99") and never passes through a float.
    """
    json_object(body)
    try:
        value = json.loads(body, parse_float=Decimal, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as error:
        raise _malformed(f"The request body is not valid JSON: {error}.") from None
    return _require_object(value)


class DrainUnreadBody:
    """WSGI middleware: once the answer is sent, read what the app left of the request body.

    A request refused before its body is read (401, 413 by Content-Length, 429, a bot) leaves
    the body on the connection. gunicorn and granian answer it keep-alive all the same, then
    close the connection (gunicorn when over 64 KiB is left): nginx, which keeps its connections
    to the server alive, may already be sending the next POST down that one, and answers it 502
    (tests/system/test_wsgi.py, test_a_body_refused_unread_leaves_the_connection_usable). Read here,
    the body is gone before the server looks and the connection serves the next request. Only a
    body of known length up to DRAIN_MAX_BYTES is read, for at most DRAIN_SECONDS; beyond
    those the server closes the connection as before.
    """

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        answer = self.app(environ, start_response)
        length = _content_length(environ)
        if length is None or length == 0 or length > DRAIN_MAX_BYTES:
            return answer
        return ClosingIterator(answer, lambda: _drain(environ["wsgi.input"]))


def _content_length(environ: dict[str, Any]) -> int | None:
    try:
        return int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None


def _drain(stream: Any) -> None:
    deadline = time.monotonic() + DRAIN_SECONDS
    try:
        while time.monotonic() < deadline and stream.read(DRAIN_CHUNK):
            pass
    except OSError:  # the client went away: nothing left to keep
        return
