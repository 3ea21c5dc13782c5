"""The compiled fast path of /api/events against marshmallow, the contract.

The endpoint takes the fast path when the body has no `\\u0000` escape (NUL is named by
marshmallow) and `LOADER.passes_fast_check(data)` holds. That must never accept what marshmallow
refuses, and what it accepts must store exactly the rows marshmallow's output would.
"""
from datetime import datetime
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from marshmallow import ValidationError

from app.ingest.privacy import may_hold_email
from app.tracking.ingest import event_row
from app.web.schema import (
    MAX_EPOCH_MS,
    MAX_EVENT_AGE_MS,
    MAX_PROPERTIES_BYTES,
    NUL_ESCAPE,
    holds_nul,
)
from blueprints.events import LOADER, BatchSchema
from models.event import EVENT_TYPES
from tests.fixtures.tracking import (
    COMMON_BAD_BODIES,
    EVENT_BAD_BODIES,
    deep_value,
    fixed_batch,
    fixed_event,
)

SCHEMA = BatchSchema()
RECEIVED = datetime(2026, 6, 1, 12, 0, 0)
SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def marshmallow_load(data: Any) -> dict[str, Any] | None:
    try:
        return SCHEMA.load(data)
    except ValidationError:
        return None


def fast_path_takes(body: bytes, data: dict[str, Any]) -> bool:
    """The endpoint's own decision (blueprints.events.post_events)."""
    return not holds_nul(body) and LOADER.passes_fast_check(data)


def rows(batch: dict[str, Any]) -> list[dict[str, Any]]:
    """What the store is given for a batch: the shared columns and each event's row."""
    shared = {"id": batch["id"], "sessionId": batch["sessionId"],
              "anonymousId": batch["anonymousId"], "userId": batch.get("userId"),
              "sent_ts": int(batch["timestamp"])}
    return [{**shared, **event_row(event, RECEIVED, batch["timestamp"], "std.example")}
            for event in batch["events"]]


def check(data: Any) -> bool:
    """Hold the two paths to each other for one payload; True when it is valid."""
    try:
        body = orjson.dumps(data)
    except orjson.JSONEncodeError:
        return False  # not something a request can carry
    parsed = orjson.loads(body)
    loaded = marshmallow_load(parsed)
    if not isinstance(parsed, dict):
        return False
    fast = fast_path_takes(body, parsed)
    if fast:
        assert loaded is not None, f"fast path accepts what marshmallow refuses: {body[:300]!r}"
    if loaded is not None and fast:
        assert rows(parsed) == rows(loaded)
    return loaded is not None


# --- hand-written corpora -------------------------------------------------------------------

def sized(size: int) -> dict[str, str]:
    return {"p": "x" * (size - len(b'{"p":""}'))}


VALID = [
    ("minimal", fixed_batch()),
    ("fifty", fixed_batch(50)),
    ("all-types", fixed_batch([fixed_event(t) for t in EVENT_TYPES])),
    ("max-lengths", fixed_batch(
        [fixed_event("custom", name="n" * 128, pageUrl="u" * 2048, pageTitle="t" * 1024,
                     referrer="r" * 2048)],
        id="i" * 128, sessionId="s" * 128, anonymousId="a" * 128, userId="u" * 128)),
    ("nulls", fixed_batch([fixed_event(name=None, pageTitle=None, referrer=None,
                                       properties=None)],
                          userId=None, compressed=None, fingerprint=None)),
    ("empty-strings", fixed_batch([fixed_event(name="", pageTitle="", referrer="")])),
    ("fractions", fixed_batch([fixed_event(timestamp=1.5)], timestamp=2.25)),
    ("edges", fixed_batch([fixed_event(timestamp=0), fixed_event(timestamp=MAX_EPOCH_MS)],
                          timestamp=0)),
    ("edges-2100", fixed_batch([fixed_event(timestamp=MAX_EPOCH_MS - MAX_EVENT_AGE_MS),
                                fixed_event(timestamp=MAX_EPOCH_MS)], timestamp=MAX_EPOCH_MS)),
    ("astral", fixed_batch([fixed_event(name="😀" * 128)], id="𝔘" * 128)),
    ("properties-at-limit", fixed_batch([fixed_event(properties=sized(MAX_PROPERTIES_BYTES))],
                                        fingerprint=sized(MAX_PROPERTIES_BYTES))),
    ("properties-deep", fixed_batch([fixed_event(properties=deep_value(64))])),
    ("money-and-forms", fixed_batch([
        fixed_event("form_submit", properties={"amount": 1, "fields": ["email", "name"]}),
        fixed_event("custom", properties={"Revenue": 2, "x": {"currency": "EUR"}})])),
    ("unknown-fields", {**fixed_batch([{**fixed_event(), "extra": [1, 2]}]), "more": {"a": 1}}),
    ("big-numbers", fixed_batch([fixed_event(properties={"n": 2**64 - 1, "m": -2**63,
                                                         "f": 1e308})])),
]


@pytest.mark.parametrize("data", [case[1] for case in VALID], ids=[case[0] for case in VALID])
def test_valid_corpus_takes_the_fast_path_and_stores_the_same_rows(data):
    body = orjson.dumps(data)
    assert fast_path_takes(body, orjson.loads(body))
    assert check(data)


def _parses_to_object(body: bytes) -> bool:
    try:
        return isinstance(orjson.loads(body), dict)
    except orjson.JSONDecodeError:
        return False


# The corpus entries that reach validation (the rest are refused while parsing the body).
BAD = [case for case in EVENT_BAD_BODIES
       if case not in COMMON_BAD_BODIES and _parses_to_object(case[1])]


@pytest.mark.parametrize("body", [case[1] for case in BAD], ids=[case[0] for case in BAD])
def test_bad_corpus_is_refused_by_both_paths(body):
    data = orjson.loads(body)
    assert not fast_path_takes(body, data)
    assert marshmallow_load(data) is None


def test_nul_is_left_to_marshmallow_by_the_body_check():
    """The compiled check does not look for NUL; the endpoint skips it when the body has one."""
    data = fixed_batch([fixed_event(pageUrl="a\x00b")])
    body = orjson.dumps(data)
    assert NUL_ESCAPE in body
    assert not fast_path_takes(body, orjson.loads(body))
    with pytest.raises(ValidationError):
        LOADER.load(orjson.loads(body), fast=False)


# --- hypothesis: valid batches and their mutations ------------------------------------------

NO_NUL = st.characters(exclude_characters="\x00", exclude_categories=("Cs",))


def text(min_size: int = 0, max_size: int = 20, limit: int | None = None):
    """Short text, or text exactly at a length limit."""
    strategy = st.text(NO_NUL, min_size=min_size, max_size=max_size)
    if limit is not None:
        strategy = strategy | st.just("x" * limit) | st.just("é" * limit)
    return strategy


OPAQUE_ID = st.text(st.characters(codec="ascii", exclude_characters="\x00"), min_size=1,
                    max_size=128).filter(lambda value: not may_hold_email(value))
timestamps = (st.integers(0, MAX_EPOCH_MS)
              | st.floats(0, MAX_EPOCH_MS, allow_nan=False, allow_infinity=False))
json_leaf = (st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1)
             | st.floats(allow_nan=False, allow_infinity=False) | st.text(NO_NUL, max_size=10))
json_value = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=4)
                          | st.dictionaries(st.text(NO_NUL, max_size=6), inner, max_size=4),
                          max_leaves=15)
json_object = st.dictionaries(st.text(NO_NUL, max_size=8), json_value, max_size=5)

events = st.fixed_dictionaries(
    {"type": st.sampled_from(EVENT_TYPES), "timestamp": timestamps,
     "pageUrl": text(1, 40, limit=2048)},
    optional={"name": st.none() | text(0, 20, limit=128),
              "pageTitle": st.none() | text(0, 20, limit=1024),
              "referrer": st.none() | text(0, 20, limit=2048),
              "properties": st.none() | json_object,
              "unknownField": json_value})


def in_time(batch: dict[str, Any]) -> dict[str, Any]:
    """`batch` with every event at most 400 days before the batch's timestamp (the rule its
    JSON Schema cannot state)."""
    oldest = batch["timestamp"] - MAX_EVENT_AGE_MS
    return {**batch, "events": [{**event, "timestamp": max(event["timestamp"], oldest)}
                                for event in batch["events"]]}


batches = st.fixed_dictionaries(
    {"id": text(1, 20, limit=128), "sessionId": text(1, 20, limit=128),
     "anonymousId": text(1, 20, limit=128).filter(lambda value: not may_hold_email(value)),
     "timestamp": timestamps,
     "events": st.lists(events, min_size=1, max_size=6)
     | events.map(lambda event: [event] * 50)},
    optional={"userId": st.none() | OPAQUE_ID,
              "compressed": st.none() | st.booleans(),
              "fingerprint": st.none() | json_object,
              "extra": json_value}).map(in_time)

WRONG_VALUES = (
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats()
    | st.text(max_size=5) | st.sampled_from(["123", "1e3", "true", "", "pageview", "a@b.co",
                                              "a%40b", "a\uff20b", "a\ufe6bb"])
    | st.just(0)  # a time too long before its batch's, most likely
    | st.just("x" * 129) | st.just("x" * 2049) | st.just("x" * 1025) | st.just("\x00")
    | st.lists(st.integers(), max_size=3) | st.dictionaries(st.text(max_size=3), st.integers(),
                                                           max_size=3)
    | st.just(sized(MAX_PROPERTIES_BYTES + 1)) | st.just(deep_value(65))
    | st.just(-1) | st.just(MAX_EPOCH_MS + 1) | st.just(float("inf")) | st.just(float("nan"))
)
BATCH_KEYS = ["id", "sessionId", "anonymousId", "timestamp", "events", "userId", "compressed",
              "fingerprint"]
EVENT_KEYS = ["type", "timestamp", "pageUrl", "name", "pageTitle", "referrer", "properties"]


@st.composite
def mutated_batches(draw) -> dict[str, Any]:
    batch = draw(batches)
    batch = {**batch, "events": [dict(event) for event in batch["events"]]}
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["batch-value", "event-value", "batch-delete",
                                     "event-delete", "events-count", "event-not-object"]))
        events_ = batch["events"] if isinstance(batch.get("events"), list) else None
        if kind == "batch-value":
            batch[draw(st.sampled_from(BATCH_KEYS))] = draw(WRONG_VALUES)
        elif kind == "batch-delete":
            batch.pop(draw(st.sampled_from(BATCH_KEYS)), None)
        elif kind == "events-count":
            batch["events"] = draw(st.sampled_from([[], [{"type": "pageview", "timestamp": 1,
                                                          "pageUrl": "u"}] * 51]))
        elif events_:
            index = draw(st.integers(0, len(events_) - 1))
            if kind == "event-not-object":
                events_[index] = draw(WRONG_VALUES)
            elif not isinstance(events_[index], dict):
                continue
            elif kind == "event-value":
                events_[index][draw(st.sampled_from(EVENT_KEYS))] = draw(WRONG_VALUES)
            else:
                events_[index].pop(draw(st.sampled_from(EVENT_KEYS)), None)
    return batch


@SETTINGS
@given(batches)
def test_generated_valid_batches(data):
    assert check(data)
    body = orjson.dumps(data)
    assert fast_path_takes(body, orjson.loads(body)), "valid input should not need marshmallow"


@SETTINGS
@given(mutated_batches())
def test_generated_mutations_are_never_looser_on_the_fast_path(data):
    check(data)
    # At the data level too (no body involved), whenever no string holds a NUL.
    try:
        body = orjson.dumps(data)
    except orjson.JSONEncodeError:
        return
    if not holds_nul(body) and LOADER.passes_fast_check(data):
        assert marshmallow_load(data) is not None
