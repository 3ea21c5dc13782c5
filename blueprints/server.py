"""POST /api/server/events: trusted server-side events, the only way money is recorded."""
from typing import Any

from flask import Blueprint, g
from marshmallow import (
    EXCLUDE,
    Schema,
    ValidationError,
    fields,
    post_load,
    validate,
    validates_schema,
)

from app.access.auth import require_key
from app.ingest.idempotency import idempotent, once
from app.ingest.plans import require_paid_plan
from app.revenue import server_events
from app.revenue.money import MAX_AMOUNT, MoneyError, active_currencies
from app.web.bodies import json_object_exact, raw_body
from app.web.limits import PER_KEY, limited
from app.web.openapi import documented
from app.web.schema import (
    MAX_EPOCH_MS,
    ExactJSONObject,
    ExactNumber,
    OpaqueId,
    StrictInteger,
    Text,
    not_too_long_ago,
)
from models.api_key import SERVER

bp = Blueprint("server", __name__)

# Where the schema's cross-field rules put their errors: the field the caller must change.
BOTH_AMOUNTS = "Send either amount or revenue_cents, not both."
CURRENCY_REQUIRED = "Required with amount or revenue_cents."
CURRENCY_ALONE = "Only allowed with amount or revenue_cents."
AMOUNT_RANGE = (f"Must be between {-MAX_AMOUNT} and {MAX_AMOUNT} (10^15 major units either way); "
                "a larger amount can be sent as revenue_cents, in minor units.")
CURRENCY_CODES = sorted(active_currencies())
# Upper case as ISO 4217 writes them, or lower case as some payment APIs do; not mixed.
CURRENCY_SPELLINGS = [*CURRENCY_CODES, *(code.lower() for code in CURRENCY_CODES)]
ACCEPTED_CURRENCIES = frozenset(CURRENCY_SPELLINGS)


class CurrencyCode(Text):
    """An active ISO 4217 code in upper or lower case; upper case out."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str:
        text = super()._deserialize(value, attr, data, **kwargs)
        if text not in ACCEPTED_CURRENCIES:
            raise ValidationError(
                "Must be an active ISO 4217 currency code, such as USD, EUR or JPY.")
        return text.upper()


def opaque_id(description: str, field: type[Text] = Text) -> Text:
    return field(allow_none=True, validate=validate.Length(min=1, max=128),
                 metadata={"description": description})


def _null(*names: str) -> dict[str, Any]:
    return {name: {"type": "null"} for name in names}


# money_fields_go_together, as JSON Schema for the document (null is the same as absent).
MONEY_SHAPES = {"oneOf": [
    {"title": "No money", "properties": _null("amount", "revenue_cents", "currency")},
    {"title": "Major units", "required": ["amount", "currency"],
     "properties": {"amount": {"type": "number"}, "currency": {"type": "string"},
                    **_null("revenue_cents")}},
    {"title": "Minor units", "required": ["revenue_cents", "currency"],
     "properties": {"revenue_cents": {"type": "integer"}, "currency": {"type": "string"},
                    **_null("amount")}},
]}


class ServerEventSchema(Schema):
    """Money is `amount` (major units) or `revenue_cents` (minor units), never both, always with
    a `currency`; a currency alone is refused too, since it most likely means an amount was sent
    under another name (`revenue`, `value`, `price`) that would otherwise be silently ignored."""

    class Meta:
        unknown = EXCLUDE
        openapi = MONEY_SHAPES

    eventName = Text(required=True, validate=validate.Length(min=1, max=128))
    identifiedUserId = opaque_id(
        "The id the tracker's identify() set, so revenue joins the visit; never an e-mail.",
        OpaqueId)
    amount = ExactNumber(
        allow_none=True,
        validate=validate.Range(min=-MAX_AMOUNT, max=MAX_AMOUNT, error=AMOUNT_RANGE),
        metadata={"description": "Major units as a JSON number (19.99 USD), read exactly; "
                                 "negative for a refund; at most as many decimals as the "
                                 "currency has (JPY 0, USD 2, BHD 3); at most 10^15 either way "
                                 "(larger: revenue_cents)."})
    revenue_cents = StrictInteger(
        allow_none=True,
        validate=validate.Range(min=-server_events.INT64_MAX, max=server_events.INT64_MAX),
        metadata={"description": "Alternative to amount: integer minor units of the currency "
                                 "(cents for USD, yen for JPY, fils for BHD): a whole number, "
                                 "read exactly (1999, 1999.0 and 1.999e3 are all 1999; 1999.5 "
                                 "is refused)."})
    currency = CurrencyCode(allow_none=True, metadata={
        "description": "Active ISO 4217 code (upper or lower case); required with amount or "
                       "revenue_cents.", "enum": [*CURRENCY_SPELLINGS, None]})
    orderId = opaque_id("Unique per site: a repeat is answered duplicate and not stored again.")
    anonymousId = opaque_id("The tracker's anonymous id.", OpaqueId)
    sessionId = opaque_id("The tracker's session id.")
    timestamp = ExactNumber(
        allow_none=True, validate=[validate.Range(min=0, max=MAX_EPOCH_MS), not_too_long_ago],
        metadata={"description": "When it happened, epoch ms: at most 400 days ago (a time in "
                                 "the future counts as the receipt time)."})
    properties = ExactJSONObject(allow_none=True, metadata={
        "description": "Free-form; amount, revenue, revenue_cents and currency are removed, "
                       "at every depth."})

    @validates_schema(skip_on_field_errors=True)
    def money_fields_go_together(self, data: dict[str, Any], **_kwargs: Any) -> None:
        has_amount = data.get("amount") is not None
        has_minor = data.get("revenue_cents") is not None
        has_currency = data.get("currency") is not None
        if has_amount and has_minor:
            raise ValidationError(BOTH_AMOUNTS, "amount")
        if (has_amount or has_minor) and not has_currency:
            raise ValidationError(CURRENCY_REQUIRED, "currency")
        if has_currency and not (has_amount or has_minor):
            raise ValidationError(CURRENCY_ALONE, "currency")

    @post_load
    def to_event(self, data: dict[str, Any], **_kwargs: Any) -> server_events.NewServerEvent:
        timestamp = data.get("timestamp")
        return server_events.NewServerEvent(
            event_name=data["eventName"],
            identified_user_id=data.get("identifiedUserId"),
            anonymous_id=data.get("anonymousId"),
            session_id=data.get("sessionId"),
            order_id=data.get("orderId"),
            money=self._money(data),
            properties=data.get("properties"),
            client_ts=int(timestamp) if timestamp is not None else None,
        )

    @staticmethod
    def _money(data: dict[str, Any]) -> server_events.Money | None:
        field = "amount" if data.get("amount") is not None else "revenue_cents"
        if data.get(field) is None:
            return None
        try:
            if field == "amount":
                return server_events.money_from_amount(data["amount"], data["currency"])
            return server_events.money_from_minor(data["revenue_cents"], data["currency"])
        except MoneyError as error:
            text = str(error)
            raise ValidationError(f"{text[:1].upper()}{text[1:]}.", field) from None


class ServerEventResponseSchema(Schema):
    success = fields.Boolean(required=True)
    id = fields.String(required=True, metadata={
        "description": "The stored event's id; for a duplicate, the first copy's id."})
    duplicate = fields.Boolean(required=True, metadata={
        "description": "True when this orderId or Idempotency-Key was already recorded: "
                       "nothing new stored."})


SCHEMA = ServerEventSchema()


@bp.post("/api/server/events")
@documented(
    "Record a trusted server event, with money",
    body=ServerEventSchema,
    responses={200: (ServerEventResponseSchema, "Stored, or a duplicate orderId."),
               400: (None, "Invalid payload; nothing stored."),
               401: (None, "Missing or invalid key."),
               403: (None, "A write key, or a plan below Standard; nothing stored."),
               413: (None, "Body too large."), 415: (None, "Not JSON."),
               429: (None, "Rate limited.")},
    tags=("server",),
)
@require_key(SERVER)
@limited(PER_KEY)
@idempotent
def post_server_event():
    require_paid_plan()
    event = SCHEMA.load(json_object_exact(raw_body()))
    return once(lambda: server_events.record(g.site, event).body())
