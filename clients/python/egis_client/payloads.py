"""The request bodies, built and checked at the call: misuse raises there, not in the sender.

Each builder returns the body as JSON text, serialized once, so that a retry sends the same
thing and a value that JSON cannot hold fails at the call. The limits are egis's (spec.md,
"Limits"; docs/ARCHITECTURE.md, "The ingest contract").
"""
from __future__ import annotations

import json
import re
import sys
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

EVENT_TYPES = ("pageview", "click", "form_submit", "scroll", "performance", "custom", "goal",
               "error", "heartbeat")
MAX_ID = 128
MAX_URL = 2048
MAX_TITLE = 1024
MAX_GOAL_NAME = 64
MAX_EVENT_NAME = 128
MAX_USER_AGENT = 1024
_QUERY_OR_FRAGMENT = re.compile(r"[?#]")
_CURRENCY = re.compile(r"[A-Za-z]{3}")


def text(value: Any, name: str, *, maximum: int, minimum: int = 0,
         optional: bool = False) -> str | None:
    """A string argument within its length bounds; None allowed only when `optional`."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if not minimum <= len(value) <= maximum:
        raise ValueError(f"{name} must be {minimum} to {maximum} characters long")
    return value


def json_object(value: Any, name: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise TypeError(f"{name} must be a dict, not {type(value).__name__}")
    return value


def epoch_ms(value: datetime | int | None, now_ms: int) -> int:
    """A timestamp argument as epoch milliseconds: an aware datetime, or int milliseconds."""
    if value is None:
        return now_ms
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("timestamp must be timezone-aware (datetime.now(timezone.utc))")
        return int(value.timestamp() * 1000)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("timestamp must be an aware datetime or int epoch milliseconds")
    if value < 0:
        raise ValueError("timestamp must not be before 1970")
    return value


def dumps(body: dict[str, Any]) -> str:
    """Compact JSON without the None values (an absent field and null mean the same to egis);
    a value JSON cannot hold (a set, a float NaN) raises here."""
    return json.dumps({k: v for k, v in body.items() if v is not None}, separators=(",", ":"),
                      ensure_ascii=False, allow_nan=False)


def event(type_: str, *, page_url: str, name: str | None, properties: dict[str, Any] | None,
          page_title: str | None, referrer: str | None, timestamp_ms: int) -> str:
    """One event of a /api/events batch."""
    if type_ not in EVENT_TYPES:
        raise ValueError(f"type must be one of {', '.join(EVENT_TYPES)}; got {type_!r}")
    return dumps({
        "type": type_,
        "name": text(name, "name", maximum=MAX_EVENT_NAME, optional=True),
        "timestamp": timestamp_ms,
        "pageUrl": text(page_url, "page_url", minimum=1, maximum=MAX_URL),
        "pageTitle": text(page_title, "page_title", maximum=MAX_TITLE, optional=True),
        "referrer": text(referrer, "referrer", maximum=MAX_URL, optional=True),
        "properties": json_object(properties, "properties"),
    })


def batch(batch_id: str, session_id: str, anonymous_id: str, sent_ms: int,
          events: list[str]) -> str:
    """A /api/events body from events already serialized by `event`."""
    head = dumps({"id": batch_id, "sessionId": session_id, "anonymousId": anonymous_id,
                  "timestamp": sent_ms})
    return f'{head[:-1]},"events":[{",".join(events)}]}}'


def goal(name: str, *, metadata: dict[str, Any] | None, anonymous_id: str | None,
         session_id: str | None, page_url: str | None, timestamp_ms: int) -> str:
    return dumps({
        "goal_name": text(name, "name", minimum=1, maximum=MAX_GOAL_NAME),
        "metadata": json_object(metadata, "metadata"),
        "anonymous_id": text(anonymous_id, "anonymous_id", maximum=MAX_ID, optional=True),
        "session_id": text(session_id, "session_id", maximum=MAX_ID, optional=True),
        "page_url": text(page_url, "page_url", maximum=MAX_URL, optional=True),
        # When it happened, not when a retry finally delivered it.
        "client_timestamp": str(timestamp_ms),
    })


def amount_text(amount: Decimal | str | int) -> str:
    """`amount` as the JSON number egis reads exactly; floats cannot hold cents: TypeError."""
    if isinstance(amount, bool | float) or not isinstance(amount, Decimal | str | int):
        raise TypeError(f"amount must be a Decimal, str or int, not {type(amount).__name__} "
                        "(a float cannot hold every amount of cents exactly)")
    try:
        number = amount if isinstance(amount, Decimal) else Decimal(str(amount).strip())
    except InvalidOperation:
        raise ValueError(f"amount must be a decimal number; got {amount!r}") from None
    if not number.is_finite():
        raise ValueError(f"amount must be a finite number; got {amount!r}")
    return str(number)


def revenue(event_name: str, *, amount: Decimal | str | int | None, revenue_cents: int | None,
            currency: str | None, order_id: str | None, user_id: str | None,
            anonymous_id: str | None, session_id: str | None,
            properties: dict[str, Any] | None, timestamp_ms: int) -> str:
    """A /api/server/events body; `amount` is written as the exact decimal it is."""
    number = amount_text(amount) if amount is not None else None
    if revenue_cents is not None and (isinstance(revenue_cents, bool)
                                      or not isinstance(revenue_cents, int)):
        raise TypeError(f"revenue_cents must be an int, not {type(revenue_cents).__name__}")
    if number is not None and revenue_cents is not None:
        raise ValueError("give amount or revenue_cents, not both")
    has_money = number is not None or revenue_cents is not None
    if has_money != (currency is not None):
        raise ValueError("currency goes with amount or revenue_cents, and only with them")
    if currency is not None and not (isinstance(currency, str) and _CURRENCY.fullmatch(currency)):
        raise ValueError(f"currency must be an ISO 4217 code such as USD; got {currency!r}")
    body = dumps({
        "eventName": text(event_name, "event_name", minimum=1, maximum=MAX_EVENT_NAME),
        "identifiedUserId": text(user_id, "user_id", minimum=1, maximum=MAX_ID, optional=True),
        "revenue_cents": revenue_cents,
        "currency": currency,
        "orderId": text(order_id, "order_id", minimum=1, maximum=MAX_ID, optional=True),
        "anonymousId": text(anonymous_id, "anonymous_id", minimum=1, maximum=MAX_ID,
                            optional=True),
        "sessionId": text(session_id, "session_id", minimum=1, maximum=MAX_ID, optional=True),
        "timestamp": timestamp_ms,
        "properties": json_object(properties, "properties"),
    })
    return body if number is None else f'{body[:-1]},"amount":{number}}}'


def crawl(*, path: str, host: str | None, user_agent: str, ip: str | None,
          sec_fetch_dest: str, sec_fetch_mode: str) -> str:
    """A /api/crawl/report body. What comes from the fetch itself is cut to what egis takes
    rather than refused: the query string (egis drops it; it may hold a token), an overlong
    path or User-Agent."""
    path = _QUERY_OR_FRAGMENT.split(text(path, "path", minimum=1, maximum=sys.maxsize), 1)[0]
    user_agent = text(user_agent, "user_agent", maximum=sys.maxsize)
    return dumps({
        "path": path[:MAX_URL] or "/",
        "host": text(host, "host", minimum=1, maximum=253, optional=True),
        "userAgent": user_agent[:MAX_USER_AGENT],
        "ip": text(ip, "ip", maximum=45, optional=True),
        "secFetchDest": text(sec_fetch_dest, "sec_fetch_dest", maximum=32),
        "secFetchMode": text(sec_fetch_mode, "sec_fetch_mode", maximum=32),
    })
