"""The least a stored batch can cost in a Python WSGI app: parse it, store it as egis does, answer.

Served by bench.ingest.floor, never deployed. Two apps, the same work: `create_app`, with Flask, and
`create_wsgi_app`, a bare WSGI callable without a framework. Each takes `POST /api/events` with
a batch as bench/harness/ingest.lua sends it, gzip-compressed or not, and stores it in the site
EGIS_FLOOR_SITE_ID with egis's own statement through egis's group writer (app.tracking.store,
app.tracking.writer), on egis's pooled connection per request (app.storage.db): the durable
work that the contract asks of every stored batch (the batch id kept for exactly-once, the
events, the quota's usage row). Nothing else: no key, no origin, no rate limit, no validation,
no bot filter, no sampling, no metrics, no log line. `GET /healthz` answers as egis's does, without
egis's hooks.
"""
import gzip
import json
import os
from collections.abc import Callable, Iterable
from typing import Any

from flask import Flask, request

from app.config import DEFAULTS
from app.storage import db
from app.tracking import quota, store
from app.tracking.writer import GroupWriter
from models import database
from models.site import utcnow

HEALTHY = b'{"status":"ok"}\n'


class Floor:
    """The durable part of storing a batch, for either app."""

    def __init__(self) -> None:
        self.site_id = int(os.environ["EGIS_FLOOR_SITE_ID"])
        self.writer = GroupWriter(store.store_group)

    def store(self, body: bytes, content_encoding: str | None) -> int:
        """Store the batch in `body`; its count for the answer."""
        if content_encoding == "gzip":
            body = gzip.decompress(body)
        batch = json.loads(body)
        now = utcnow()
        events = [{"type": event["type"], "name": None, "page_url": event.get("pageUrl"),
                   "page_title": event.get("pageTitle"), "referrer": event.get("referrer"),
                   "properties": event.get("properties"), "client_ts": None, "occurred_at": now}
                  for event in batch["events"]]
        outcome = self.writer.store(store.BatchRows(
            site_id=self.site_id, batch_key=batch["id"], session_id=batch["sessionId"],
            anonymous_id=batch["anonymousId"], user_id=None, sent_ts=batch["timestamp"],
            received_at=now, weight=1.0, events=events, period=quota.period_of(now),
            shard=quota.shard()))
        return outcome.count


def create_app() -> Flask:
    """The floor with Flask: egis's framework, none of egis's hooks."""
    app = Flask(__name__)
    app.config["DATABASE_URL"] = os.environ["DATABASE_URL"]
    app.config["DB_MAX_CONNECTIONS"] = 8
    # what app.storage.db reads, as egis is configured by default
    app.config["DB_IDLE_TRANSACTION_SECONDS"] = DEFAULTS["DB_IDLE_TRANSACTION_SECONDS"]
    db.init_app(app)
    floor = Floor()

    @app.get("/healthz")
    @db.without_database
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/api/events")
    def post_events() -> dict[str, object]:
        count = floor.store(request.get_data(), request.headers.get("Content-Encoding"))
        return {"success": True, "count": count}

    return app


StartResponse = Callable[[str, list[tuple[str, str]]], Any]


def create_wsgi_app() -> Callable[[dict, StartResponse], Iterable[bytes]]:
    """The floor without a framework: what the WSGI server and the store cost alone."""
    database.initialize(db.make_database(os.environ["DATABASE_URL"], 8))
    floor = Floor()

    def wsgi_app(environ: dict, start_response: StartResponse) -> Iterable[bytes]:
        if environ["PATH_INFO"] == "/healthz":
            answer = HEALTHY
        else:
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            database.connect(reuse_if_open=True)
            try:
                count = floor.store(body, environ.get("HTTP_CONTENT_ENCODING"))
            finally:
                database.close()
            answer = json.dumps({"success": True, "count": count}).encode()
        start_response("200 OK", [("Content-Type", "application/json"),
                                  ("Content-Length", str(len(answer)))])
        return [answer]

    return wsgi_app
