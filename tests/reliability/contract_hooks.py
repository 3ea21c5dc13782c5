"""schemathesis hooks for tests/reliability/test_contract.py (the CLI loads them: `hooks`).

- `errors_are_json_objects`, a check: every error answer is `{"error": "<sentence>"}`, except
  on the OAuth authorization endpoint, a page for a person, whose errors are HTML pages.
- `before_call`: the rules the document can only state in words are applied to generated
  bodies, so that a body the document calls valid is one the service must accept: an amount's
  decimals depend on its currency (tested on its own in tests/revenue/), and an event's time may
  lie at most 400 days before its receipt (a batch's events at most 400 days before the batch's
  timestamp, a goal's client_timestamp and a server event's timestamp at most 400 days ago;
  tested in tests/tracking/ and tests/revenue/). Only values the document calls valid are moved
  (a time, a currency's amount), so a body it calls invalid stays invalid. An amount's size is
  not adjusted: the document's bounds (10^15 either way) are the service's
  (tests/revenue/test_money_bounds.py). Nothing else is adjusted: an integer field takes every
  number JSON Schema calls an integer (1999.0 too).
"""
from decimal import ROUND_DOWN, Decimal
from typing import Any

import orjson
import schemathesis

from app.revenue.money import MAX_AMOUNT, active_currencies, currency_exponent
from app.tracking.ingest import parse_client_timestamp
from app.web.schema import MAX_EPOCH_MS, MAX_EVENT_AGE_MS, epoch_ms_now

MCP_PATH = "/api/mcp"
PAGE_PATHS = {"/oauth/authorize"}  # answers a person: HTML, its errors too
SERVER_EVENTS_PATH = "/api/server/events"
EVENTS_PATH = "/api/events"
GOALS_PATH = "/api/goals"
MAX_CLIENT_TIMESTAMP = 64  # the goal field's length: a longer one must stay refused


@schemathesis.check
def errors_are_json_objects(_ctx: Any, response: schemathesis.Response,
                            case: schemathesis.Case) -> None:
    """An error answer is JSON `{"error": "<sentence>", ...}`; on /api/mcp a JSON-RPC error
    object may stand in its place (its shape is the document's, checked by the built-in
    response_schema_conformance)."""
    if response.status_code < 400:
        return
    content_type = response.headers.get("content-type", [""])[0]
    if case.operation.path in PAGE_PATHS and content_type.startswith("text/html"):
        return
    if not content_type.startswith("application/json"):
        raise AssertionError(f"an error answered {content_type!r}, not JSON")
    body = orjson.loads(response.content)
    if case.operation.path == MCP_PATH and isinstance(body, dict) and "jsonrpc" in body:
        return
    if not (isinstance(body, dict) and isinstance(body.get("error"), str) and body["error"]):
        raise AssertionError(f'an error body without a sentence under "error": {body!r}')


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def recordable_amount(amount: float | int, currency: str) -> float | int:
    """`amount` cut to the currency's decimals (toward zero: still within the bounds); one
    beyond the bounds as it is (the document calls it invalid: the service must refuse it)."""
    value = Decimal(repr(amount))
    if abs(value) > MAX_AMOUNT:
        return amount
    exponent = currency_exponent(currency)
    value = value.quantize(Decimal(1).scaleb(-exponent), rounding=ROUND_DOWN)
    return int(value) if exponent == 0 else float(value)


def _is_time(value: Any) -> bool:
    return _is_number(value) and 0 <= value <= MAX_EPOCH_MS


def events_in_time(batch: dict[str, Any]) -> None:
    """Each event's time no more than 400 days before the batch's, where both are times."""
    sent, events = batch.get("timestamp"), batch.get("events")
    if not (_is_time(sent) and isinstance(events, list)):
        return
    for event in events:
        if isinstance(event, dict) and _is_time(event.get("timestamp")):
            event["timestamp"] = max(event["timestamp"], sent - MAX_EVENT_AGE_MS)


def own_time_in_time(body: dict[str, Any]) -> None:
    """A goal's client_timestamp or a server event's timestamp that is a time more than 400
    days ago (minus a day: the run takes minutes) becomes now."""
    now = epoch_ms_now()
    oldest = now - MAX_EVENT_AGE_MS + 86_400_000
    if _is_time(body.get("timestamp")) and body["timestamp"] < oldest:
        body["timestamp"] = now
    raw = body.get("client_timestamp")
    if isinstance(raw, str) and len(raw) <= MAX_CLIENT_TIMESTAMP:
        client_ms = parse_client_timestamp(raw)
        if client_ms is not None and client_ms < oldest:
            body["client_timestamp"] = str(now)


@schemathesis.hook
def before_call(context: Any, case: schemathesis.Case, kwargs: dict[str, Any]) -> None:
    body = case.body
    if not isinstance(body, dict):
        return
    path = case.operation.path
    currency = body.get("currency")
    if (path == SERVER_EVENTS_PATH and _is_number(body.get("amount"))
            and isinstance(currency, str) and currency.upper() in active_currencies()):
        body["amount"] = recordable_amount(body["amount"], currency)
    if path == EVENTS_PATH:
        events_in_time(body)
    elif path in (GOALS_PATH, SERVER_EVENTS_PATH):
        own_time_in_time(body)
