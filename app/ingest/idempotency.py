"""The `Idempotency-Key` request header (docs/ARCHITECTURE.md, "The ingest contract").

/api/goals, /api/server/events and /api/crawl/report have no id of their own in the body, so a
backend retrying after a lost answer would store a goal, a revenue event without `orderId` or a
crawl hit twice. With the header (1 to 128 printable ASCII characters, the IETF draft's name), a
request repeating a key the site used on the same endpoint in the last KEY_DAYS days is answered
as the first was (its status and body, with `"duplicate": true` in a JSON body) and stores
nothing.

A view takes part with two things: `@idempotent` (the header is checked before anything else,
and documented) and, once the body is validated, `return once(store)` around what stores and
answers. Validation comes first, so a bad body is refused whatever its key. Then the key is
claimed and the request stored in one transaction, and the claim is an insert under the unique
(site, endpoint, key) index, so the database decides between racing copies: on PostgreSQL the
second copy's insert waits for the first transaction and then finds the key taken (or takes
it, if the first rolled back); on SQLite writers are serialized anyway. A repeat never runs
`store`. A request that fails after its claim (an error answer, an exception) rolls the claim
back with everything else: only a stored request's key counts. A key older than KEY_DAYS is
claimed afresh by the same statement, whether or not the retention job (app.retention.prune)
has deleted it yet.
"""
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import wraps
from typing import Any

from flask import Response, current_app, g, request

from app.runtime import tally
from app.storage import durable
from app.web.errors import ApiError
from models import IdempotencyKey, database
from models.ingest_tally import DUPLICATE_IDEMPOTENCY_KEY
from models.site import utcnow

HEADER = "Idempotency-Key"
KEY_DAYS = 7
MAX_KEY_LENGTH = 128
# Printable ASCII; a space inside only, since HTTP servers strip the ends of a header value.
KEY_PATTERN = "^[\\x21-\\x7e]([\\x20-\\x7e]*[\\x21-\\x7e])?$"
_KEY = re.compile(KEY_PATTERN)
INVALID_KEY_ERROR = (f"{HEADER} header must be 1 to {MAX_KEY_LENGTH} printable ASCII "
                     "characters, with no space at either end (a UUID is a good key). Nothing "
                     "was stored.")
OPENAPI_PARAMETER = {
    "name": HEADER, "in": "header", "required": False,
    "description": f"Makes a retry safe: a valid request repeating a key this site used on "
                   f"this endpoint in the last {KEY_DAYS} days is answered as the first was "
                   f"(a JSON answer says \"duplicate\": true) and stores nothing. One new key "
                   f"per goal, event or report; keep it for that one's retries.",
    "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH,
               "pattern": KEY_PATTERN},
}


def sent_idempotency_key() -> str | None:
    """The request's Idempotency-Key; None without the header; a 400 when it is not a valid
    key. (app.access.auth.presented_key is the API key.)"""
    if HEADER not in request.headers:
        return None
    key = request.headers[HEADER]
    if len(key) > MAX_KEY_LENGTH or not _KEY.fullmatch(key):
        raise ApiError(400, INVALID_KEY_ERROR)
    return key


def idempotent(view: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a view that stores and answers through `once` (after the key decorator): a bad
    header is a 400 before the body is read; the header is documented in the OpenAPI document."""

    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g.idempotency_key = sent_idempotency_key()
        return view(*args, **kwargs)

    wrapper.openapi_parameters = (OPENAPI_PARAMETER,)  # read by app.web.openapi
    return wrapper


def once(store: Callable[[], Any]) -> Any:
    """`store()`'s answer (it stores and returns the view's answer), kept with the request's
    key; for a repeated key, the first answer, and `store` is not called. Without the header,
    just `store()`."""
    key = g.get("idempotency_key")
    if key is None:
        return store()
    return answer_once(g.site.id, request.path, key, store)


def answer_once(site_id: int, endpoint: str, key: str, store: Callable[[], Any],
                now: datetime | None = None) -> Response:
    """`store()`'s response, kept with the key, unless the key is taken: then the first
    request's response, marked duplicate."""
    now = now or utcnow()
    with database.atomic() as transaction:
        if not _claim(site_id, endpoint, key, now):
            durable.confirm()  # a 200 only once the first copy is on the standby too
            tally.add(site_id, DUPLICATE_IDEMPOTENCY_KEY)  # egis_duplicates_total too
            return _repeat(site_id, endpoint, key)
        response = current_app.make_response(store())
        if not 200 <= response.status_code < 300:
            transaction.rollback()  # not stored: the key stays free for the retry
            return response
        body = response.get_json(silent=True) if response.is_json else None
        (IdempotencyKey.update(status=response.status_code, response=body)
         .where(*_row(site_id, endpoint, key))
         .execute())
    return response


def _row(site_id: int, endpoint: str, key: str) -> tuple[Any, ...]:
    return (IdempotencyKey.site_id == site_id, IdempotencyKey.endpoint == endpoint,
            IdempotencyKey.key == key)


def _claim(site_id: int, endpoint: str, key: str, now: datetime) -> bool:
    """Insert the key, or take over one older than KEY_DAYS; False when it is taken."""
    fresh = {IdempotencyKey.created_at: now, IdempotencyKey.status: None,
             IdempotencyKey.response: None}
    cursor = (IdempotencyKey.insert(site_id=site_id, endpoint=endpoint, key=key, created_at=now)
              .on_conflict(conflict_target=[IdempotencyKey.site_id, IdempotencyKey.endpoint,
                                            IdempotencyKey.key],
                           update=fresh,
                           where=IdempotencyKey.created_at < now - timedelta(days=KEY_DAYS))
              .returning(IdempotencyKey.id)
              .execute())
    return any(True for _ in cursor)


def _repeat(site_id: int, endpoint: str, key: str) -> Response:
    first = IdempotencyKey.get(*_row(site_id, endpoint, key))
    if isinstance(first.response, dict):
        response = current_app.make_response({**first.response, "duplicate": True})
        response.status_code = first.status
        return response
    response = current_app.response_class(status=first.status)
    del response.headers["Content-Type"]
    return response


__all__ = ["HEADER", "KEY_DAYS", "OPENAPI_PARAMETER", "answer_once", "idempotent", "once",
           "sent_idempotency_key"]
