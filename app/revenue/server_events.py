"""Trusted server events: the only place money is recorded (POST /api/server/events).

Rules (docs/API.md, "POST /api/server/events"): money is stored as integer minor units of an active
ISO 4217 currency, converted with the currency's own exponent from the Decimal of the JSON text,
never a float; negative amounts are refunds. An `orderId` is stored at most once per site, also when
copies race: the insert itself decides (ON CONFLICT DO NOTHING on PostgreSQL, the unique index
inside a savepoint on SQLite) and a repeat answers with the first copy's id. Server events are never
sampled and do not count against the monthly quota: revenue is never dropped.
"""
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from peewee import IntegrityError

from app.ingest.privacy import strip_money
from app.revenue.money import MoneyError, normalize_currency, to_minor_units
from app.runtime import metrics, tally
from app.storage import durable
from app.storage.dialect import current
from models import ServerEvent, Site, database
from models.ingest_tally import DUPLICATE_ORDER
from models.site import utcnow

EPOCH = datetime(1970, 1, 1)
INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class Money:
    minor: int  # integer minor units; negative for a refund
    currency: str  # upper-case, active ISO 4217


@dataclass(frozen=True)
class NewServerEvent:
    """A validated server event, ready to store."""

    event_name: str
    identified_user_id: str | None = None
    anonymous_id: str | None = None
    session_id: str | None = None
    order_id: str | None = None
    money: Money | None = None
    properties: dict[str, Any] | None = None
    client_ts: int | None = None  # epoch ms as sent


@dataclass(frozen=True)
class Recorded:
    id: str
    duplicate: bool

    def body(self) -> dict[str, Any]:
        return {"success": True, "id": self.id, "duplicate": self.duplicate}


def money_from_amount(amount: Decimal | int, currency: str) -> Money:
    """Major units (USD 19.99) to minor units (1999); MoneyError names what is wrong."""
    code = normalize_currency(currency)
    return Money(minor=to_minor_units(amount, code), currency=code)


def money_from_minor(minor: int, currency: str) -> Money:
    """Integer minor units as sent (`revenue_cents`, whatever the currency's exponent)."""
    if isinstance(minor, bool) or not isinstance(minor, int):
        raise TypeError(f"minor units must be an int, not {type(minor).__name__}")
    if abs(minor) > INT64_MAX:
        raise MoneyError("amount is too large to record")
    return Money(minor=minor, currency=normalize_currency(currency))


def occurred_at(client_ms: int | None, received_at: datetime) -> datetime:
    """The event's own time when it has one (backfills keep theirs), never after it arrived."""
    if client_ms is None:
        return received_at
    return min(EPOCH + timedelta(milliseconds=client_ms), received_at)


def _row(site_id: int, event: NewServerEvent, now: datetime) -> dict[str, Any]:
    money = event.money
    return {
        "uid": uuid.uuid4(),
        "site_id": site_id,
        "event_name": event.event_name,
        "identified_user_id": event.identified_user_id,
        "anonymous_id": event.anonymous_id,
        "session_id": event.session_id,
        "order_id": event.order_id,
        "amount_minor": money.minor if money else None,
        "currency": money.currency if money else None,
        "properties": strip_money(event.properties) if event.properties is not None else None,
        "client_ts": event.client_ts,
        "occurred_at": occurred_at(event.client_ts, now),
        "received_at": now,
    }


def record(site: Site, event: NewServerEvent, now: datetime | None = None) -> Recorded:
    """Store a server event; a repeated `order_id` stores nothing and returns the first id."""
    row = _row(site.id, event, now or utcnow())
    if event.order_id is None:
        ServerEvent.insert(**row).execute()
        inserted = True
    else:
        inserted = (_insert_once_by_conflict(row) if current().inserts_once_by_conflict
                    else _insert_once_portable(row))
    if inserted:
        metrics.count_server_event_stored()
        return Recorded(id=str(row["uid"]), duplicate=False)
    durable.confirm()  # a 200 only once the first copy is on the standby too
    tally.add(site.id, DUPLICATE_ORDER)  # and egis_duplicates_total{kind="order"}
    return Recorded(id=_existing_uid(site.id, event.order_id), duplicate=True)


def _insert_once_by_conflict(row: dict[str, Any]) -> bool:
    # A concurrent copy makes this statement wait for the other to commit, then do nothing.
    cursor = (ServerEvent.insert(**row)
              .on_conflict(action="IGNORE",
                           conflict_target=[ServerEvent.site_id, ServerEvent.order_id])
              .returning(ServerEvent.id)
              .execute())
    return any(True for _ in cursor)


def _insert_once_portable(row: dict[str, Any]) -> bool:
    try:
        with database.atomic():
            ServerEvent.insert(**row).execute()
    except IntegrityError:
        return False
    return True


def _existing_uid(site_id: int, order_id: str) -> str:
    uid = (ServerEvent.select(ServerEvent.uid)
           .where(ServerEvent.site_id == site_id, ServerEvent.order_id == order_id)
           .scalar())
    return str(uid)


__all__ = ["Money", "MoneyError", "NewServerEvent", "Recorded", "money_from_amount",
           "money_from_minor", "occurred_at", "record"]
