"""Dynamic client registration (RFC 7591, POST /oauth/register): public clients, kept small and
counted, since anyone may register without a key.

What one registration stores is bounded by the metadata it may have (app.oauth.metadata: 1-10
redirect URIs of at most 1,000 characters, a name of at most 200 characters; nothing else
is kept but the fixed grant types and scope): about 10 KB at most. How many there are, by two
caps, past which registration is a 429 with Retry-After and an error_description saying when:
- per client address, EGIS_RATE_LIMIT_OAUTH_REGISTER (20 an hour), counted in the rate limit
  store like every per-address limit (app.web.limits: per worker with memory://, shared with Redis);
- in all, EGIS_OAUTH_REGISTRATIONS_PER_DAY (1,000) in any 24 hours, counted in the database:
  the one place every worker and host shares whatever the limit store is (with memory:// a cap
  there would be one per worker). The count and the insert run under one lock (an advisory
  lock on PostgreSQL, an IMMEDIATE transaction on SQLite), so that registrations at the same
  moment cannot pass the cap together; the count is read once before too, so that a
  registration refused takes no lock (on SQLite the write lock holds back ingest). It reads an
  index of the registered clients by time (migration 0018).
A registration no owner ever allowed goes a day after it was made (`flask data prune`,
app.oauth.expiry), so the registrations kept number about two days' caps at most.

Written here, not with Authlib's ClientRegistrationEndpoint: that endpoint checks metadata with
joserfc claims, which check no types (a `redirect_uris` string is read character by character)
and name a claim, not the rule; the body is read by the marshmallow schema that
/api/openapi.json documents (app.oauth.metadata), like every other body of the service, and what
Authlib would add to that, a random client_id and a timestamp, is two lines.
"""
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from flask import current_app

from app.oauth import metadata
from app.storage.dialect import current
from app.web.errors import ApiError
from app.web.limits import OAUTH_REGISTER, count_against
from models import OAuthClient
from models.oauth_client import REGISTERED
from models.site import utcnow

DAY = timedelta(hours=24)
LOCK_ID = 0x6567_6973_7265_67  # "egisreg": PostgreSQL's advisory lock of the daily count


def register(body: bytes) -> dict[str, Any]:
    """Register a public client from its metadata, JSON (ApiError 400 when not valid, 429 past
    a cap); the answer."""
    try:
        kept = metadata.load(orjson.loads(body))
    except orjson.JSONDecodeError:
        raise ApiError(400, metadata.INVALID_CLIENT_METADATA,
                       error_description="The body is not valid JSON.") from None
    try:
        count_against(OAUTH_REGISTER)
    except ApiError as refused:
        raise _saying_when(refused, "Too many registrations came from your address") from None
    _refuse_past_daily_cap(utcnow())  # read first: a refusal takes no lock
    with _counting():  # and again under the lock: no two registrations pass the cap together
        now = utcnow()
        _refuse_past_daily_cap(now)
        record = OAuthClient.create(client_id=secrets.token_urlsafe(24), kind=REGISTERED,
                                    created_at=now, **metadata.columns(kept))
    return {"client_id": record.client_id,
            "client_id_issued_at": int(now.replace(tzinfo=UTC).timestamp()), **kept}


@contextmanager
def _counting() -> Iterator[None]:
    """One registration at a time counts and inserts, on every worker and host."""
    with current().one_transaction_at_a_time(LOCK_ID):
        yield


def _refuse_past_daily_cap(now: datetime) -> None:
    cap = int(current_app.config["OAUTH_REGISTRATIONS_PER_DAY"])
    recent = (OAuthClient.select(OAuthClient.created_at)
              .where(OAuthClient.kind == REGISTERED, OAuthClient.created_at > now - DAY))
    count = recent.count()
    if count < cap:
        return
    # The registration whose 24 hours, once ended, leave fewer than the cap.
    freed = recent.order_by(OAuthClient.created_at).offset(count - cap).limit(1).scalar()
    seconds = max(1, int(((freed or now) + DAY - now).total_seconds()) + 1)
    raise _saying_when(ApiError(
        429, f"Registration limit reached ({cap} in 24 hours, from all addresses); retry after "
             "the Retry-After delay.", {"Retry-After": str(seconds)}),
        f"egis has taken the {cap} registrations it takes in 24 hours")


def _saying_when(refused: ApiError, what: str) -> ApiError:
    """`refused` (a 429) with an error_description saying when to try again."""
    seconds = int(refused.headers["Retry-After"])
    when = utcnow() + timedelta(seconds=seconds)
    return ApiError(refused.status, refused.message, refused.headers,
                    refused.tally_reason, error_description=(
                        f"{what}: try again after {when:%Y-%m-%d %H:%M:%S} UTC (in "
                        f"{_duration(seconds)})."))


def _duration(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} seconds"
    if seconds < 7200:
        return f"{seconds // 60} minutes"
    return f"{seconds // 3600} hours and {seconds % 3600 // 60} minutes"
