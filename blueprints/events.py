"""POST /api/events: a batch of 1 to 50 tracking events."""
from typing import Any

from flask import Blueprint, g
from marshmallow import EXCLUDE, Schema, ValidationError, fields, validate, validates_schema

from app.ingest import plans
from app.tracking import ingest
from app.tracking.gate import tracking_endpoint
from app.tracking.pipeline import ingest_events
from app.web import cors
from app.web.bodies import json_object, raw_body
from app.web.openapi import documented
from app.web.schema import (
    BEFORE_ITS_BATCH,
    MAX_EPOCH_MS,
    FastLoader,
    Flag,
    JSONObject,
    Number,
    OpaqueId,
    Text,
    holds_nul,
)
from models.event import EVENT_TYPES

MAX_EVENTS = 50
bp = Blueprint("events", __name__)
cors.enable(bp)


epoch_ms = validate.Range(min=0, max=MAX_EPOCH_MS)


class EventSchema(Schema):
    class Meta:
        unknown = EXCLUDE

    type = Text(required=True, validate=validate.OneOf(EVENT_TYPES))
    name = Text(allow_none=True, validate=validate.Length(max=128))
    timestamp = Number(required=True, validate=epoch_ms,
                       metadata={"description": "Epoch milliseconds."})
    pageUrl = Text(required=True, validate=validate.Length(min=1, max=2048))
    pageTitle = Text(allow_none=True, validate=validate.Length(max=1024))
    referrer = Text(allow_none=True, validate=validate.Length(max=2048))
    properties = JSONObject(allow_none=True)


class BatchSchema(Schema):
    class Meta:
        unknown = EXCLUDE

    id = Text(required=True, validate=validate.Length(min=1, max=128),
              metadata={"description": "Batch id, unique per site: a resend is not stored twice."})
    sessionId = Text(required=True, validate=validate.Length(min=1, max=128))
    anonymousId = OpaqueId(required=True, validate=validate.Length(min=1, max=128))
    userId = OpaqueId(allow_none=True, validate=validate.Length(min=1, max=128),
                      metadata={"description": "The id given to identify(); never an e-mail."})
    timestamp = Number(required=True, validate=epoch_ms,
                       metadata={"description": "When the batch was sent, epoch ms."})
    compressed = Flag(allow_none=True)
    fingerprint = JSONObject(allow_none=True)
    events = fields.List(fields.Nested(EventSchema), required=True,
                         validate=validate.Length(min=1, max=MAX_EVENTS))

    @validates_schema(skip_on_field_errors=True)
    def events_arrive_in_time(self, batch: dict[str, Any], **_kwargs: Any) -> None:
        late = {index: {"timestamp": [BEFORE_ITS_BATCH]}
                for index, event in enumerate(batch["events"])
                if ingest.arrives_too_late(batch["timestamp"], event["timestamp"])}
        if late:
            raise ValidationError({"events": late})


class IngestResponseSchema(Schema):
    success = fields.Boolean(required=True)
    count = fields.Integer(required=True, metadata={"description": "Events stored."})
    sampled = fields.Boolean(metadata={"description": "Over quota: whole sessions sampled."})
    duplicate = fields.Boolean(metadata={"description": "This batch id was already stored."})
    bot = fields.Boolean(metadata={"description": "A bot's browser request: nothing stored."})


class PlanRestrictedSchema(Schema):
    error = fields.String(required=True)
    restrictedTypes = fields.List(fields.String(validate=validate.OneOf(sorted(
        plans.PAID_TYPES))), metadata={
        "description": "On a plan restriction: the types to drop before resending the rest."})


def _extra_rules_hold(batch: dict[str, Any]) -> bool:
    """The schema's rules that its JSON Schema form cannot carry (see app.web.schema).

    NUL characters are the caller's check (on the raw body, see post_events).
    """
    sent_ms = batch["timestamp"]
    if any(ingest.arrives_too_late(sent_ms, event["timestamp"]) for event in batch["events"]):
        return False
    return JSONObject.all_acceptable(
        [value for value in (batch.get("fingerprint"),
                             *(event.get("properties") for event in batch["events"])) if value])


LOADER = FastLoader(BatchSchema, _extra_rules_hold)


@bp.post("/api/events")
@documented(
    "Ingest a batch of 1 to 50 events",
    body=BatchSchema,
    responses={200: (IngestResponseSchema, "Stored (or sampled, duplicate, or a bot)."),
               400: (None, "Invalid payload; nothing stored."),
               401: (None, "Missing or invalid key."),
               403: (PlanRestrictedSchema, "Plan restriction or foreign Origin."),
               413: (None, "Body too large."), 415: (None, "Not JSON."),
               429: (None, "Rate limited.")},
    tags=("tracking",),
)
@tracking_endpoint(lambda: {"success": True, "count": 0, "bot": True})
def post_events():
    body = raw_body()
    # NUL in any string: let marshmallow find and name the field.
    batch = LOADER.load(json_object(body), fast=not holds_nul(body))
    return ingest_events(g.site, batch).body()

