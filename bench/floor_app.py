"""The least a stored batch can cost in a Flask app: parse it, store it as egis does, answer.

Served by bench/floor.py, never deployed. `POST /api/events` takes a batch as bench/ingest.lua
sends it, gzip-compressed or not, and stores it in the site EGIS_FLOOR_SITE_ID with egis's own
statement through egis's group writer (app.tracking.store, app.tracking.writer), on egis's
pooled connection per request (app.db): the durable work that the contract asks of every stored
batch (the batch id kept for exactly-once, the events, the quota's usage row). Nothing else: no
key, no origin, no rate limit, no validation, no bot filter, no sampling, no metrics, no log
line. `GET /healthz` answers as egis's does, without egis's hooks.
"""
import gzip
import json
import os

from flask import Flask, request

from app import db
from app.tracking import quota, store
from app.tracking.writer import GroupWriter
from models.site import utcnow


def create_app() -> Flask:
    app = Flask(__name__)
    app.config["DATABASE_URL"] = os.environ["DATABASE_URL"]
    app.config["DB_MAX_CONNECTIONS"] = 8
    db.init_app(app)
    site_id = int(os.environ["EGIS_FLOOR_SITE_ID"])
    writer = GroupWriter(store.store_group)

    @app.get("/healthz")
    @db.without_database
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/api/events")
    def post_events() -> dict[str, object]:
        body = request.get_data()
        if request.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        batch = json.loads(body)
        now = utcnow()
        events = [{"type": event["type"], "name": None, "page_url": event.get("pageUrl"),
                   "page_title": event.get("pageTitle"), "referrer": event.get("referrer"),
                   "properties": event.get("properties"), "client_ts": None, "occurred_at": now}
                  for event in batch["events"]]
        outcome = writer.store(store.BatchRows(
            site_id=site_id, batch_key=batch["id"], session_id=batch["sessionId"],
            anonymous_id=batch["anonymousId"], user_id=None, sent_ts=batch["timestamp"],
            received_at=now, weight=1.0, events=events, period=quota.period_of(now),
            shard=quota.shard()))
        return {"success": True, "count": outcome.count}

    return app
