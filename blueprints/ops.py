"""Operations: liveness, readiness, metrics and the OpenAPI document."""
from flask import Blueprint, current_app, jsonify

from app.runtime.metrics import render_metrics
from app.storage.db import without_database
from app.storage.replica import state as replica_state
from app.web.errors import DATABASE_RETRY_AFTER_SECONDS, render
from app.web.limits import store_is_up
from app.web.openapi import build_spec
from models import database

bp = Blueprint("ops", __name__)


@bp.get("/healthz")
@without_database
def healthz():
    return {"status": "ok"}


@bp.get("/readyz")
@without_database
def readyz():
    """Ready when the database answers. The rate-limit store and the read replica are
    reported, not required: without the store requests are allowed uncounted (app.web.limits),
    without the replica the primary answers the reads (app.storage.replica); degraded, not
    down."""
    try:
        with database.connection_context():
            database.execute_sql("SELECT 1")
            replica = replica_state()
    except Exception as error:  # any failure to reach the database means not ready
        current_app.logger.warning("not ready: %s", type(error).__name__)
        return render(503, "The database is unavailable.",
                      {"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)})
    return {"status": "ready", "database": "up",
            "rateLimitStore": "up" if store_is_up() else "down",
            **({"readReplica": replica} if replica is not None else {})}


@bp.get("/metrics")
@without_database
def metrics():
    return render_metrics()


@bp.get("/api/openapi.json")
@without_database
def openapi_document():
    spec = current_app.extensions.get("egis_openapi")
    if spec is None:
        spec = current_app.extensions["egis_openapi"] = build_spec(current_app)
    return jsonify(spec)
