"""Storage-free tracking: visitor and visit ids derived on the server (docs/ARCHITECTURE.md,
"Storage-free tracking").

A batch (or goal) whose anonymous id or session id is "-" carries no id of its own: the
tracker kept nothing on the device. The visitor is then a keyed hash (BLAKE2b) of the site, the
User-Agent and the client's network (an IPv4 address, an IPv6 /64) under the random salt of the
UTC day of receipt (models.visitor_salt); of the address, this module keeps only the hash. The
visit is derived: a visitor's events split into visits after VISIT_GAP without an event (event time,
as app.tracking.ingest corrects it for clock skew). Its session id is random, so it does not
lead back to the visitor id, and is kept per visitor in one row (models.visitor_state) that a
single upsert reads and moves on: concurrent first requests of one visitor, in any worker or
host, get the same visit.

A batch is one visit: the store writes one session id per batch, and splitting one would give
its halves no batch id of their own (idempotency). The tracker sends every few seconds, so a
batch spanning a 30-minute silence is rare; it is counted in the visit of its first event, and
its last event is the one the next batch is measured from.
"""
import hashlib
import secrets
from datetime import UTC, date, datetime, timedelta
from typing import Any

from flask import current_app, request
from peewee import EXCLUDED, Case, Value

from app.tracking import ingest
from app.web.limits import client_network
from models import VisitorSalt, VisitorState

DERIVE = "-"  # the id a storage-free tracker sends: "egis, derive it"
VISIT_GAP = timedelta(minutes=30)
VISITOR_ID_BYTES = 16  # 32 hex characters
SESSION_ID_BYTES = 16
_SALTS = "egis_visitor_salts"


def visitor_id(salt: bytes, site_id: int, network: str, user_agent: str) -> str:
    """The visitor's id for one day: keyed BLAKE2b (made for keyed hashing: no HMAC around it)
    of the site, the client's network (app.web.limits.client_network: an IPv4 address, an IPv6 /64)
    and its User-Agent. The User-Agent comes last, so no value of it can pass for another split
    of the fields."""
    message = f"{site_id}\n{network}\n{user_agent}"
    return hashlib.blake2b(message.encode("utf-8", "surrogatepass"), key=salt,
                           digest_size=VISITOR_ID_BYTES).hexdigest()


class DailySalt:
    """This worker's copy of the current day's salt: read from the database once a day."""

    def __init__(self) -> None:
        self._current: tuple[date, bytes] | None = None

    def of(self, day: date) -> bytes:
        current = self._current
        if current is None or current[0] != day:
            current = (day, VisitorSalt.of_day(day))
            self._current = current  # one assignment: safe beside other threads
        return current[1]


def daily_salt() -> DailySalt:
    return current_app.extensions.setdefault(_SALTS, DailySalt())


def epoch_ms(moment: datetime) -> int:
    return int(moment.replace(tzinfo=UTC).timestamp() * 1000)


def visit_of(site_id: int, visitor: str, day: date, first: datetime, last: datetime) -> str:
    """The session id of the visit whose events run from `first` to `last`: the visitor's
    current one, or a new one when `first` comes more than VISIT_GAP after its latest event.

    One statement, atomic on both databases: the first of concurrent requests inserts the row,
    the others update it and read the session id it holds.
    """
    gap_ms = VISIT_GAP // timedelta(milliseconds=1)
    starts_new = Value(epoch_ms(first)) - VisitorState.last_event_ms > gap_ms
    later = EXCLUDED.last_event_ms > VisitorState.last_event_ms
    query = (VisitorState
             .insert(site_id=site_id, visitor=visitor, day=day,
                     session_id=secrets.token_hex(SESSION_ID_BYTES),
                     last_event_ms=epoch_ms(last))
             .on_conflict(conflict_target=(VisitorState.site_id, VisitorState.visitor), update={
                 VisitorState.session_id: Case(None, [(starts_new, EXCLUDED.session_id)],
                                               VisitorState.session_id),
                 VisitorState.last_event_ms: Case(None, [(later, EXCLUDED.last_event_ms)],
                                                  VisitorState.last_event_ms),
                 VisitorState.day: EXCLUDED.day})
             .returning(VisitorState.session_id))
    ((session_id,),) = query.tuples().execute()
    return session_id


def derived_ids(site_id: int, anonymous_id: str | None, session_id: str | None,
                received_at: datetime, first: datetime, last: datetime
                ) -> tuple[str | None, str | None]:
    """(anonymous id, session id) with each DERIVE replaced by the derived id.

    A session id to derive needs a visitor: the one given, else the request's hash. The
    request is its sender's (its address after ProxyFix, EGIS_TRUSTED_PROXIES): a browser's,
    or a backend's posting for its own visitors.
    """
    day = received_at.date()
    visitor = anonymous_id
    if not anonymous_id or anonymous_id == DERIVE:  # a goal's may be absent or empty
        visitor = visitor_id(daily_salt().of(day), site_id, client_network(),
                             request.headers.get("User-Agent", ""))
    if session_id == DERIVE:
        session_id = visit_of(site_id, visitor, day, first, last)
    return (visitor if anonymous_id == DERIVE else anonymous_id), session_id


def derives_visitor(anonymous_id: str | None) -> bool:
    """Whether ingest derives the visitor id of a batch or goal sending `anonymous_id`: then its
    events are stored storage-free (models.Event.storage_free), as their visitor changes with
    the UTC day and no later visit can be told from a new visitor's. A derived session id
    alone (a backend that knows its visitor) leaves the visitor followable."""
    return anonymous_id == DERIVE


def derive_batch_ids(site_id: int, batch: dict[str, Any], now: datetime) -> dict[str, Any]:
    """A validated batch of POST /api/events, received at `now`, with its "-" ids derived
    (DERIVE)."""
    if DERIVE not in (batch["anonymousId"], batch["sessionId"]):
        return batch
    times = [ingest.occurred_at(now, batch["timestamp"], event["timestamp"])
             for event in batch["events"]]
    anonymous_id, session_id = derived_ids(site_id, batch["anonymousId"], batch["sessionId"],
                                           now, min(times), max(times))
    return {**batch, "anonymousId": anonymous_id, "sessionId": session_id}


def derive_goal_ids(site_id: int, goal: dict[str, Any], now: datetime) -> dict[str, Any]:
    """A validated goal of POST /api/goals, received at `now`, with its "-" ids derived
    (DERIVE)."""
    if DERIVE not in (goal.get("anonymous_id"), goal.get("session_id")):
        return goal
    moment = ingest.goal_time(ingest.parse_client_timestamp(goal.get("client_timestamp")), now)
    anonymous_id, session_id = derived_ids(site_id, goal.get("anonymous_id"),
                                           goal.get("session_id"), now, moment, moment)
    return {**goal, "anonymous_id": anonymous_id, "session_id": session_id}
