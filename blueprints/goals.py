"""POST /api/goals: one conversion goal, stored as an event of type `goal`."""
from typing import Any

from flask import Blueprint, g
from marshmallow import EXCLUDE, Schema, fields, validate

from app.ingest.idempotency import idempotent, once
from app.tracking import ingest
from app.tracking.gate import tracking_endpoint
from app.tracking.pipeline import ingest_posted_goal
from app.web import cors
from app.web.bodies import json_object, raw_body
from app.web.openapi import documented
from app.web.schema import JSONObject, OpaqueId, Text, not_too_long_ago

bp = Blueprint("goals", __name__)
cors.enable(bp)


def happened_in_time(raw: str) -> None:
    """A client_timestamp that sets the goal's time sets one at most 400 days ago (text that
    is not a time leaves the goal at its receipt time, as before)."""
    client_ms = ingest.parse_client_timestamp(raw)
    if client_ms is not None:
        not_too_long_ago(client_ms)


class GoalSchema(Schema):
    class Meta:
        unknown = EXCLUDE

    goal_name = Text(required=True, validate=validate.Length(min=1, max=64))
    metadata = JSONObject(allow_none=True)
    anonymous_id = OpaqueId(allow_none=True, validate=validate.Length(max=128))
    session_id = Text(allow_none=True, validate=validate.Length(max=128))
    page_url = Text(allow_none=True, validate=validate.Length(max=2048))
    page_title = Text(allow_none=True, validate=validate.Length(max=1024))
    referrer = Text(allow_none=True, validate=validate.Length(max=2048))
    client_timestamp = Text(
        allow_none=True, validate=[validate.Length(max=64), happened_in_time], metadata={
            "description": "ISO 8601 or epoch ms as a string, at most 400 days ago (a time "
                           "in the future counts as the receipt time); other text is kept as "
                           "sent."})


class GoalResponseSchema(Schema):
    success = fields.Boolean(required=True)
    sampled = fields.Boolean(metadata={"description": "Over quota: sessions are sampled."})
    bot = fields.Boolean(metadata={"description": "A bot's browser request: nothing stored."})
    duplicate = fields.Boolean(metadata={
        "description": "This Idempotency-Key was already used: nothing stored again."})


GOAL_SCHEMA = GoalSchema()


@bp.post("/api/goals")
@documented(
    "Record a conversion goal",
    body=GoalSchema,
    responses={200: (GoalResponseSchema, "Stored (or sampled at quota)."),
               400: (None, "Invalid payload; nothing stored."),
               401: (None, "Missing or invalid key."),
               403: (None, "Foreign Origin."), 413: (None, "Body too large."),
               415: (None, "Not JSON."), 429: (None, "Rate limited.")},
    tags=("tracking",),
)
@tracking_endpoint(lambda: {"success": True, "bot": True})
@idempotent
def post_goal():
    goal = GOAL_SCHEMA.load(json_object(raw_body()))
    return once(lambda: store_goal(goal))


def store_goal(goal: dict[str, Any]) -> dict[str, Any]:
    result = ingest_posted_goal(g.site, goal)
    body = {"success": True}
    if result.sampled:
        body["sampled"] = True
    return body
