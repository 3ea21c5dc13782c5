"""Every request, accounted for: a request id, its metrics, and one JSON log line.

The line carries the request id (also sent back as X-Request-Id), the endpoint and its route
pattern, the status, the duration and the site id: never a key, an IP, a header or a query
string. An X-Request-Id from the proxy (deploy/nginx.conf sends nginx's $request_id) is kept
when it looks like one, so the proxy's log and egis's share the id. Other log records of the
app are JSON lines too.
"""
import logging
import re
import sys
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import orjson
from flask import Flask, Response, g, request

from app.runtime import metrics

# The logger keeps the name it had before the module moved to app/runtime/: operators' log
# configurations and log searches name it.
log = logging.getLogger("app.request_log")

REQUEST_ID_HEADER = "X-Request-Id"
ACCEPTED_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, and the record's `fields`."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "pid": record.process,  # which gunicorn worker
            "msg": record.getMessage(),
            **getattr(record, "fields", {}),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


def _configure_logging() -> None:
    """JSON lines on stderr for the app's loggers (`app.*`), set up once per process."""
    app_logger = logging.getLogger("app")
    if any(isinstance(handler.formatter, JsonFormatter) for handler in app_logger.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    app_logger.addHandler(handler)
    app_logger.setLevel(logging.INFO)


def _request_id() -> str:
    offered = request.headers.get(REQUEST_ID_HEADER, "")
    return offered if ACCEPTED_REQUEST_ID.fullmatch(offered) else uuid.uuid4().hex


def _start() -> None:
    g.started_at = time.perf_counter()
    g.request_id = _request_id()


def _finish(response: Response) -> Response:
    seconds = time.perf_counter() - g.get("started_at", time.perf_counter())
    endpoint = request.endpoint or "unmatched"
    metrics.observe_request(endpoint, response.status_code, seconds)
    request_id = g.get("request_id") or _request_id()
    response.headers[REQUEST_ID_HEADER] = request_id
    site = g.get("site")
    log.info("request", extra={"fields": {
        "request_id": request_id,
        "method": request.method,
        "route": request.url_rule.rule if request.url_rule is not None else None,
        "endpoint": endpoint,
        "status": response.status_code,
        "duration_ms": round(seconds * 1000, 3),
        "site_id": site.id if site is not None else None,
    }})
    return response


def init_app(app: Flask) -> None:
    """Call first in the factory: the clock starts before any other before-request hook."""
    _configure_logging()
    app.before_request(_start)
    app.after_request(_finish)
