"""Property tests of the payload contracts, with the published document as the oracle.

Hypothesis builds bodies for /api/events, /api/goals and /api/server/events field by field from
valid values and from what the contract refuses (wrong types, lengths, NUL, bad numbers, money
in the wrong shape). A body is expected to be accepted exactly when /api/openapi.json's schema
for it says it is valid and it keeps the few rules the document states in words (no e-mail as a
user id; an amount's decimals). Accepted: 200, and what is read back from the database is the
body unchanged, less what the contract strips (money keys from free-form properties, at every
depth). Refused: 400 `{"error": ...}` and nothing stored. The rules in words: an amount's
decimals, and an event's time at most 400 days before its receipt (a batch's events at most 400
days before the batch's timestamp; a goal's or a server event's own time at most 400 days ago).
"""
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import jsonschema_rs
import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from app.revenue.money import active_currencies, currency_exponent
from app.tracking.ingest import parse_client_timestamp
from app.web.schema import MAX_EPOCH_MS, MAX_EVENT_AGE_MS, epoch_ms_now
from models import Batch, CrawlHit, Event, IngestTally, ServerEvent, Usage
from models.event import EVENT_TYPES
from tests.fixtures.helpers import db

ABSENT = object()  # a field left out of the body
MONEY_KEYS = {"amount", "revenue", "revenue_cents", "currency"}
PROPERTY = settings(max_examples=150, derandomize=True, database=None, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

# --- building blocks: each field is (valid values, refused values) --------------------------------

Field = tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]]
TEXT = st.characters(codec="utf-8", exclude_characters="\x00")  # what a JSON string can carry
WRONG_TYPES = st.one_of(st.integers(-5, 5), st.booleans(), st.just([]), st.just({"k": 1}))
MISSING = st.sampled_from([ABSENT, None])


def text(min_size: int = 0, max_size: int = 128) -> st.SearchStrategy[str]:
    return st.text(TEXT, min_size=min_size, max_size=max_size)


def text_field(min_size: int, max_size: int, required: bool = False) -> Field:
    """A string: refused too long or too short, with a NUL, or of another type."""
    refused = st.one_of(WRONG_TYPES, text(max_size + 1, max_size + 3),
                        text(max_size=5).map(lambda value: value + "\x00"),
                        st.just("") if min_size else st.nothing(),
                        MISSING if required else st.nothing())
    valid = text(min_size, max_size)
    return valid if required else st.one_of(MISSING, valid), refused


@st.composite
def payload(draw: st.DrawFn, fields: dict[str, Field], refuse_one_in: int = 2) -> dict[str, Any]:
    """Every field valid, except (one time in `refuse_one_in`) one field drawn refused."""
    values = {name: draw(valid) for name, (valid, _refused) in fields.items()}
    if draw(st.integers(1, refuse_one_in)) == 1:
        name = draw(st.sampled_from(sorted(fields)))
        values[name] = draw(fields[name][1])
    return body_of(values)


# form_submit's `fields` is filtered for personal data (tests/ingest/test_privacy.py): not
# generated.
JSON_KEY = st.one_of(text(max_size=8).filter(lambda key: key != "fields"),
                     st.sampled_from(["amount", "Revenue", "CURRENCY", "revenue_cents", "price"]))
JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
                      st.floats(allow_nan=False, allow_infinity=False), text(max_size=12))
JSON_OBJECT = st.dictionaries(JSON_KEY, st.recursive(
    JSON_LEAF, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(JSON_KEY, inner,
                                                                           max_size=3),
    max_leaves=8), max_size=5)
FREE_FORM: Field = (st.one_of(MISSING, JSON_OBJECT),
                    st.sampled_from([[1], "x", 3, {"a": "\x00"}, {"a": [{"b\x00": 1}]}]))
EPOCH_MS: Field = (st.one_of(st.integers(0, MAX_EPOCH_MS), st.floats(0, MAX_EPOCH_MS)),
                   st.sampled_from([-1, MAX_EPOCH_MS + 1, "1700000000000", True, None, ABSENT]))
# An event's own time (a server event's): mostly within the last 400 days, sometimes before.
NOW_MS = epoch_ms_now()
OLDEST_MS = NOW_MS - MAX_EVENT_AGE_MS + 86_400_000  # a day's margin: the test takes minutes
OWN_TIME: Field = (st.one_of(MISSING, st.integers(OLDEST_MS, MAX_EPOCH_MS),
                             st.floats(OLDEST_MS, MAX_EPOCH_MS)),
                   st.one_of(EPOCH_MS[1], st.integers(0, OLDEST_MS - 2 * 86_400_000)))
EMAILS = st.sampled_from(["ann@example.com", "<ann@example.com>", "ann%40example.com",
                          "ann\uff20example.com", "ann\ufe6bexample.com"])


def too_long_ago(epoch_ms: Any) -> bool:
    return isinstance(epoch_ms, int | float) and not isinstance(epoch_ms, bool) and (
        0 <= epoch_ms < NOW_MS - MAX_EVENT_AGE_MS)


def body_of(fields: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in fields.items() if value is not ABSENT}


def as_numbers(value: Any) -> Any:
    """`value` with every JSON number as the Decimal its text denotes: PostgreSQL's jsonb keeps
    6.725542174936671e16 as the numeric 67255421749366710, the same JSON number."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return Decimal(repr(value))
    if isinstance(value, list):
        return [as_numbers(item) for item in value]
    return {key: as_numbers(item) for key, item in value.items()}


def without_money(value: Any) -> Any:
    if isinstance(value, list):
        return [without_money(item) for item in value]
    if not isinstance(value, dict):
        return value
    return {key: without_money(item) for key, item in value.items()
            if key.lower() not in MONEY_KEYS}


@pytest.fixture
def app(make_app):
    return make_app(RATELIMIT_ENABLED=False)


# --- the oracle and the harness ------------------------------------------------------------------

@pytest.fixture(scope="module")
def documented(migrated: str) -> Callable[[str], Any]:
    """A validator per component of the served document."""
    from app import create_app

    document = create_app({"DATABASE_URL": migrated}).test_client().get(
        "/api/openapi.json").get_json()

    def validator(name: str) -> Any:
        return jsonschema_rs.validator_for({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$ref": f"#/components/schemas/{name}", "components": document["components"]})

    return validator


STORED = (Batch, Event, ServerEvent, CrawlHit, Usage, IngestTally)


def forget_everything_stored(app) -> None:
    with db(app):
        for model in STORED:
            model.delete().execute()


def send(client, app, path: str, body: dict[str, Any], headers: dict[str, str],
         accepted: bool) -> None:
    """POST `body` after a clean slate; accepted: a 200, else a 400 and an empty database."""
    event("accepted" if accepted else "refused")  # --hypothesis-show-statistics shows the mix
    forget_everything_stored(app)
    response = client.post(path, data=orjson.dumps(body), headers=headers,
                           content_type="application/json")
    if accepted:
        assert response.status_code == 200, (response.get_json(), body)
        return
    assert response.status_code == 400, (response.status_code, response.get_json(), body)
    assert isinstance(response.get_json()["error"], str)
    with db(app):
        assert [model.select().count() for model in STORED[:-1]] == [0] * 5


# --- /api/events ---------------------------------------------------------------------------------

EVENT = payload({
    "type": (st.sampled_from(EVENT_TYPES), st.one_of(text(1, 64), st.just("purchase"), MISSING)),
    "name": text_field(0, 128),
    "timestamp": EPOCH_MS,
    "pageUrl": text_field(1, 2048, required=True),
    "pageTitle": text_field(0, 1024),
    "referrer": text_field(0, 2048),
    "properties": FREE_FORM,
}, refuse_one_in=8)
BATCH = payload({
    "id": text_field(1, 128, required=True),
    "sessionId": text_field(1, 128, required=True),
    "anonymousId": text_field(1, 128, required=True),
    "userId": (text_field(1, 128)[0], st.one_of(text_field(1, 128)[1], EMAILS)),
    "timestamp": EPOCH_MS,
    "compressed": (st.one_of(MISSING, st.booleans()), st.sampled_from([1, "true"])),
    "fingerprint": FREE_FORM,
    "events": (st.lists(EVENT, min_size=1, max_size=4),
               st.sampled_from([[], {}, ABSENT, None, [1]])),
})


def is_time(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and (
        0 <= value <= MAX_EPOCH_MS)


def in_time(batch: dict[str, Any]) -> dict[str, Any]:
    """`batch` with every event's time within 400 days before the batch's, where both are
    times: drawn independently, most would be decades apart."""
    sent, events = batch.get("timestamp"), batch.get("events")
    if not (is_time(sent) and isinstance(events, list)):
        return batch
    return {**batch, "events": [
        {**event, "timestamp": max(event["timestamp"], sent - MAX_EVENT_AGE_MS)}
        if isinstance(event, dict) and is_time(event.get("timestamp")) else event
        for event in events]}


def late_events(batch: dict[str, Any]) -> bool:
    sent = batch.get("timestamp")
    return is_time(sent) and any(
        isinstance(event, dict) and is_time(event.get("timestamp"))
        and sent - event["timestamp"] > MAX_EVENT_AGE_MS for event in batch.get("events", []))


# Three in four in time, the others as drawn.
BATCHES = st.tuples(BATCH, st.integers(1, 4)).map(
    lambda drawn: in_time(drawn[0]) if drawn[1] > 1 else drawn[0])


def stored_events(app, columns: tuple[str, ...]) -> list[dict[str, Any]]:
    with db(app):
        rows = list(Event.select().order_by(Event.id).dicts())
    return [{name: as_numbers(row[name]) for name in columns} for row in rows]


EVENT_COLUMNS = ("type", "name", "page_url", "page_title", "referrer", "properties", "client_ts",
                 "session_id", "anonymous_id", "user_id", "sent_ts")


@PROPERTY
@given(batch=BATCHES)
def test_a_batch_is_stored_as_sent_or_refused_whole(client, app, std_site, documented, batch):
    user_id = batch.get("userId")
    accepted = documented("Batch").is_valid(batch) and not late_events(batch)
    send(client, app, "/api/events", batch, std_site.write_headers(), accepted)
    if not accepted:
        return
    with db(app):
        (stored,) = Batch.select()
    assert (stored.batch_key, stored.event_count) == (batch["id"], len(batch["events"]))
    assert stored_events(app, EVENT_COLUMNS) == [as_numbers({
        "type": sent["type"], "name": sent.get("name"), "page_url": sent["pageUrl"],
        "page_title": sent.get("pageTitle"), "referrer": sent.get("referrer"),
        "properties": without_money(sent.get("properties")), "client_ts": int(sent["timestamp"]),
        "session_id": batch["sessionId"], "anonymous_id": batch["anonymousId"],
        "user_id": user_id, "sent_ts": int(batch["timestamp"])}) for sent in batch["events"]]


# --- /api/goals --------------------------------------------------------------------------------

GOAL = payload({
    "goal_name": text_field(1, 64, required=True),
    "metadata": FREE_FORM,
    "anonymous_id": text_field(0, 128),
    "session_id": text_field(0, 128),
    "page_url": text_field(0, 2048),
    "page_title": text_field(0, 1024),
    "referrer": text_field(0, 2048),
    "client_timestamp": (st.one_of(text_field(0, 64)[0], st.just("0"),
                                   st.integers(OLDEST_MS, NOW_MS).map(str)),
                         text_field(0, 64)[1]),
})


def goal_too_long_ago(goal: dict[str, Any]) -> bool:
    raw = goal.get("client_timestamp")
    return isinstance(raw, str) and too_long_ago(parse_client_timestamp(raw))
GOAL_COLUMNS = ("type", "name", "page_url", "page_title", "referrer", "properties",
                "session_id", "anonymous_id", "client_time_raw")


@PROPERTY
@given(goal=GOAL)
def test_a_goal_is_stored_as_sent_or_refused(client, app, std_site, documented, goal):
    accepted = documented("Goal").is_valid(goal) and not goal_too_long_ago(goal)
    send(client, app, "/api/goals", goal, std_site.write_headers(), accepted)
    if accepted:
        assert stored_events(app, GOAL_COLUMNS) == [as_numbers({
            "type": "goal", "name": goal["goal_name"], "page_url": goal.get("page_url"),
            "page_title": goal.get("page_title"), "referrer": goal.get("referrer"),
            "properties": without_money(goal.get("metadata")) or None,
            "session_id": goal.get("session_id"), "anonymous_id": goal.get("anonymous_id"),
            "client_time_raw": goal.get("client_timestamp")})]


# --- /api/server/events --------------------------------------------------------------------------

CURRENCY = st.sampled_from(sorted(active_currencies()))


@st.composite
def money(draw: st.DrawFn) -> dict[str, Any]:
    """Money fields as the contract takes them, or in a shape it refuses."""
    currency = draw(st.one_of(CURRENCY, CURRENCY.map(str.lower)))
    minor = draw(st.integers(-(10**12), 10**12))
    exponent = currency_exponent(currency)
    amount = float(Decimal(minor).scaleb(-exponent)) if exponent else minor
    too_precise = float(Decimal(2 * minor + 1).scaleb(-exponent - 1))
    return draw(st.sampled_from([
        {}, {}, {}, {"amount": amount, "currency": currency},
        {"amount": amount, "currency": currency}, {"amount": amount, "currency": currency},
        {"revenue_cents": minor, "currency": currency},
        {"revenue_cents": minor, "currency": currency, "amount": None},
        {"revenue_cents": float(minor), "currency": currency},  # 1999.0 is the integer 1999
        # refused
        {"amount": too_precise, "currency": currency}, {"amount": amount},
        {"revenue_cents": minor}, {"currency": currency},
        {"amount": amount, "revenue_cents": minor, "currency": currency},
        {"revenue_cents": minor + 0.5, "currency": currency},
        {"amount": str(amount), "currency": currency},
        {"amount": amount, "currency": currency.title()}, {"amount": amount, "currency": "XAU"},
    ]))


SERVER_EVENT = st.tuples(payload({
    "eventName": text_field(1, 128, required=True),
    "identifiedUserId": (text_field(1, 128)[0], st.one_of(text_field(1, 128)[1], EMAILS)),
    "orderId": text_field(1, 128),
    "anonymousId": (text_field(1, 128)[0], st.one_of(text_field(1, 128)[1], EMAILS)),
    "sessionId": text_field(1, 128),
    "timestamp": OWN_TIME,
    "properties": FREE_FORM,
}, refuse_one_in=3), money()).map(lambda parts: {**parts[0], **parts[1]})
SERVER_EVENT_COLUMNS = ("event_name", "identified_user_id", "order_id", "anonymous_id",
                        "session_id", "amount_minor", "currency", "properties", "client_ts")


def as_sent_in_minor_units(body: dict[str, Any]) -> int | None:
    """The amount the service must record; None when the body breaks the decimals rule."""
    if body.get("revenue_cents") is not None:
        return body["revenue_cents"]
    if body.get("amount") is None:
        return None
    minor = Decimal(repr(body["amount"])).scaleb(currency_exponent(body["currency"]))
    return int(minor) if minor == minor.to_integral_value() else None


@PROPERTY
@given(sent=SERVER_EVENT)
def test_a_server_event_is_stored_as_sent_or_refused(client, app, std_site, documented, sent):
    user_id = sent.get("identifiedUserId")
    has_money = sent.get("amount") is not None or sent.get("revenue_cents") is not None
    accepted = (documented("ServerEvent").is_valid(sent)
                and not too_long_ago(sent.get("timestamp"))
                and (not has_money or as_sent_in_minor_units(sent) is not None))
    send(client, app, "/api/server/events", sent, std_site.server_headers(), accepted)
    if not accepted:
        return
    with db(app):
        rows = list(ServerEvent.select().dicts())
    assert [{name: as_numbers(row[name]) for name in SERVER_EVENT_COLUMNS} for row in rows] == [
        as_numbers({
            "event_name": sent["eventName"], "identified_user_id": user_id,
            "order_id": sent.get("orderId"), "anonymous_id": sent.get("anonymousId"),
            "session_id": sent.get("sessionId"),
            "amount_minor": as_sent_in_minor_units(sent) if has_money else None,
            "currency": sent["currency"].upper() if has_money else None,
            "properties": without_money(sent.get("properties")),
            "client_ts": int(sent["timestamp"]) if sent.get("timestamp") is not None
            else None})]
