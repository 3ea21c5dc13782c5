"""One error class and one renderer: every error leaves as JSON `{"error": "..."}`."""
import logging
from typing import Any

from flask import Flask, Response, g, jsonify
from marshmallow import ValidationError
from peewee import InterfaceError, OperationalError
from playhouse.pool import MaxConnectionsExceeded
from werkzeug.exceptions import HTTPException

from app.runtime import tally
from models.ingest_tally import REJECTED_400, REJECTED_413

log = logging.getLogger(__name__)

# Short, readable sentences instead of Werkzeug's HTML-era descriptions.
MESSAGES = {
    400: "The request is malformed.",
    401: "A valid API key is required.",
    403: "This key may not do that.",
    404: "No such endpoint.",
    405: "This method is not allowed on this endpoint.",
    413: "The request body is too large.",
    415: "The request body must be JSON (Content-Type: application/json).",
    429: "Too many requests; slow down and retry after the Retry-After delay.",
    500: "Internal server error; the request was not stored, retry later.",
    503: "The database is unavailable; nothing was stored, retry later.",
}
DATABASE_RETRY_AFTER_SECONDS = 5


class ApiError(Exception):
    """Raise to answer with `status` and `{"error": message, **extra}`."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None,
                 tally_reason: str | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}
        self.tally_reason = tally_reason  # counted against the site as a rejected request
        self.extra = extra


def render(status: int, message: str, headers: dict[str, str] | None = None,
           **extra: Any) -> Response:
    response = jsonify({"error": message, **extra})
    response.status_code = status
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def format_validation_messages(messages: Any, path: str = "") -> str:
    """Flatten marshmallow's nested messages into `events.3.type: Must be one of ...`."""
    if isinstance(messages, dict):
        parts = [format_validation_messages(v, f"{path}.{k}" if path else str(k))
                 for k, v in messages.items()]
        return "; ".join(parts)
    if isinstance(messages, list) and all(isinstance(m, str) for m in messages):
        text = " ".join(messages)
        return f"{path}: {text}" if path else text
    if isinstance(messages, list):
        return "; ".join(format_validation_messages(m, path) for m in messages)
    return f"{path}: {messages}" if path else str(messages)


def _count_rejection(reason: str | None) -> None:
    site = g.get("site")
    if reason and site is not None:
        tally.add_quietly(site.id, reason)


def _api_error(error: ApiError) -> Response:
    _count_rejection(error.tally_reason)
    return render(error.status, error.message, error.headers, **error.extra)


def _validation_error(error: ValidationError) -> Response:
    _count_rejection(REJECTED_400)
    return render(400, format_validation_messages(error.messages), details=error.messages)


def _http_error(error: HTTPException) -> Response:
    status = error.code or 500
    if status == 413:
        _count_rejection(REJECTED_413)
    headers = {}
    if status == 405 and error.valid_methods:
        headers["Allow"] = ", ".join(error.valid_methods)
    return render(status, MESSAGES.get(status, error.name), headers)


def _database_unavailable(error: Exception) -> Response:
    log.warning("database unavailable: %s", type(error).__name__)
    return render(503, MESSAGES[503], {"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)})


def _unexpected(error: Exception) -> Response:
    # Registered for Exception (not 500): Flask skips a 500 handler while TESTING is on.
    if isinstance(error, HTTPException):
        return _http_error(error)
    log.exception("unhandled error")
    return render(500, MESSAGES[500])


def init_app(app: Flask) -> None:
    app.register_error_handler(ApiError, _api_error)
    app.register_error_handler(ValidationError, _validation_error)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(OperationalError, _database_unavailable)
    app.register_error_handler(InterfaceError, _database_unavailable)
    # Every pooled connection busy for the pool's whole wait: unavailable, not a server bug.
    app.register_error_handler(MaxConnectionsExceeded, _database_unavailable)
    app.register_error_handler(Exception, _unexpected)
