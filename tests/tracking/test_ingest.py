"""Unit tests of the ingest building blocks (no HTTP): time, sampling, cleaning, bodies, fields."""
import gzip
import zlib
from datetime import UTC, date, datetime, timedelta

import orjson
import pytest
from marshmallow import ValidationError

from app import tally
from app.bodies import NUMBER_TOO_LARGE, gunzip, json_object
from app.errors import ApiError, format_validation_messages
from app.fields import (
    MAX_EPOCH_MS,
    MAX_EVENT_AGE_MS,
    MAX_JSON_DEPTH,
    MAX_PROPERTIES_BYTES,
    JSONObject,
    nesting_exceeds,
)
from app.tracking import ingest, quota
from app.tracking.ingest import IngestResult
from models import IngestTally, Site
from tests.fixtures.tracking import db, deep_value, tallies

NOW = datetime(2026, 6, 1, 12, 0, 0)


# --- time -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("sent", "event", "expected"), [
    (10_000, 5_000, NOW - timedelta(seconds=5)),
    (10_000, 10_000, NOW),
    (10_000, 12_000, NOW),  # an event "after" sending: clamped to arrival
    (10_000.5, 10_000, NOW - timedelta(microseconds=500)),
    (MAX_EPOCH_MS, 0, NOW - timedelta(milliseconds=MAX_EPOCH_MS)),
])
def test_occurred_at(sent, event, expected):
    assert ingest.occurred_at(NOW, sent, event) == expected


@pytest.mark.parametrize(("raw", "expected"), [
    (None, None), ("", None), ("   ", None), ("yesterday", None),
    ("2024-05-01T12:00:00Z", 1714564800000),
    ("2024-05-01T12:00:00+00:00", 1714564800000),
    ("2024-05-01T13:00:00+01:00", 1714564800000),
    ("2024-05-01T12:00:00", 1714564800000),
    ("2024-05-01 12:00:00Z", 1714564800000),
    ("2024-05-01T12:00:00.123Z", 1714564800123),
    ("1714564800000", 1714564800000),
    ("\t1714564800000\n", 1714564800000),
    ("0", 0),
    (str(MAX_EPOCH_MS), MAX_EPOCH_MS),
    (str(MAX_EPOCH_MS + 1), None),
    ("9" * 64, None),
    ("²", None), ("١٢٣", None), ("-5", None), ("+5", None), ("1.5", None), ("1e3", None),
    ("1969-12-31T23:59:59Z", None),
    ("2024-02-30T00:00:00Z", None),
    ("2024-05-01T12:00:00+24:00", None),
])
def test_parse_client_timestamp(raw, expected):
    assert ingest.parse_client_timestamp(raw) == expected


def test_goal_time():
    assert ingest.goal_time(None, NOW) == NOW
    assert ingest.goal_time(ms(NOW - timedelta(hours=1)), NOW) == NOW - timedelta(hours=1)
    assert ingest.goal_time(ms(NOW + timedelta(hours=1)), NOW) == NOW
    assert ingest.goal_time(10**20, NOW) == NOW  # unrepresentable: arrival time


def ms(moment: datetime) -> int:
    return int(moment.replace(tzinfo=UTC).timestamp() * 1000)


# --- plan, money, forms ---------------------------------------------------------------------

@pytest.mark.parametrize(("plan", "types", "expected"), [
    ("free", {"pageview", "performance", "error"}, ["error", "performance"]),
    ("free", {"pageview", "custom", "goal"}, []),
    ("standard", {"performance", "error"}, []),
    ("pro", {"performance", "error"}, []),
])
def test_restricted_types(plan, types, expected):
    assert ingest.restricted_types(Site(domain="x.example", plan=plan), types) == expected


def test_clean_properties():
    assert ingest.clean_properties("custom", None) is None
    assert ingest.clean_properties("custom", {}) == {}
    kept = {"a": 1}
    assert ingest.clean_properties("custom", kept) is kept  # nothing to strip: no copy
    assert ingest.clean_properties("click", {"AMOUNT": 1, "Revenue": 2, "revenue_cents": 3,
                                             "cUrReNcY": "x", "b": {"amount": 1, "c": 2}}) == {
        "b": {"c": 2}}
    assert ingest.clean_properties("form_submit", {"amount": 1, "fields": ["email", "name"]}) == {
        "fields": ["name"]}
    assert ingest.clean_properties("click", {"fields": ["email"]}) == {"fields": ["email"]}


@pytest.mark.parametrize(("sent", "event", "late"), [
    (1000, 1000, False), (1000, 5000, False),  # after its batch: stored at receipt
    (MAX_EVENT_AGE_MS, 0, False), (MAX_EVENT_AGE_MS + 1, 0, True),
    (MAX_EVENT_AGE_MS + 0.5, 0.25, True), (MAX_EPOCH_MS, 0, True),
])
def test_arrives_too_late(sent, event, late):
    """More than 400 days between the event and its batch's sending: the corrected time
    (occurred_at) lies that long before the receipt, whenever the batch arrives."""
    assert ingest.arrives_too_late(sent, event) is late
    assert (NOW - ingest.occurred_at(NOW, sent, event) > timedelta(
        milliseconds=MAX_EVENT_AGE_MS)) is late


def test_event_row_does_not_modify_the_event():
    event = {"type": "form_submit", "timestamp": 5.0, "pageUrl": "u",
             "properties": {"amount": 1, "fields": ["password"]}}
    before = orjson.dumps(event)
    row = ingest.event_row(event, NOW, 10.0, "std.example")
    assert orjson.dumps(event) == before
    assert row == {"type": "form_submit", "name": None, "page_url": "u", "page_title": None,
                   "referrer": None, "properties": {"fields": []}, "client_ts": 5,
                   "occurred_at": NOW - timedelta(milliseconds=5), "path": None,
                   "hostname": None, **dict.fromkeys(("source", "channel", "referrer_url",
                                                      "utm_source", "utm_medium", "utm_campaign",
                                                      "utm_content", "utm_term"))}


# --- sampling -------------------------------------------------------------------------------

def test_keeps_session_is_deterministic_and_uniform():
    sessions = [f"s{i}" for i in range(20_000)]
    kept = [s for s in sessions if quota.keeps_session(s, 0.1)]
    assert kept == [s for s in sessions if quota.keeps_session(s, 0.1)]
    assert 0.09 < len(kept) / len(sessions) < 0.11
    assert not any(quota.keeps_session(s, 0.0) for s in sessions[:1000])
    assert all(quota.keeps_session(s, 1.0) for s in sessions[:1000])
    # nested rates: a session kept at 10% is kept at 50%
    assert all(quota.keeps_session(s, 0.5) for s in kept)
    assert quota.keeps_session("\ud800", 0.5) in (True, False)  # no encoding error


class FixedUsage(quota.UsageCache):
    def __init__(self, used: int) -> None:
        super().__init__(ttl=0)
        self._used = used

    def used(self, site_id: int, period: str) -> int:
        return self._used


def test_decide_sampling():
    site = Site(id=1, domain="x.example", plan="free", monthly_quota=10)
    kept = next(f"s{i}" for i in range(100) if quota.keeps_session(f"s{i}", 0.25))
    dropped = next(f"s{i}" for i in range(100) if not quota.keeps_session(f"s{i}", 0.25))
    under = ingest.decide_sampling(site, dropped, FixedUsage(9), 0.25, NOW)
    assert (under.keep, under.weight, under.sampling) == (True, 1.0, False)
    at = ingest.decide_sampling(site, kept, FixedUsage(10), 0.25, NOW)
    assert (at.keep, at.weight, at.sampling) == (True, 4.0, True)
    out = ingest.decide_sampling(site, dropped, FixedUsage(11), 0.25, NOW)
    assert (out.keep, out.sampling) == (False, True)
    nobody = ingest.decide_sampling(site, None, FixedUsage(11), 0.25, NOW)
    assert (nobody.keep, nobody.sampling) == (False, True)
    zero = ingest.decide_sampling(site, kept, FixedUsage(11), 0.0, NOW)
    assert (zero.keep, zero.sampling) == (False, True)


def test_quota_status():
    state = quota.QuotaStatus(period="2026-06", limit=10, used=12)
    assert (state.remaining, state.sampling) == (0, True)
    state = quota.QuotaStatus(period="2026-06", limit=10, used=9)
    assert (state.remaining, state.sampling) == (1, False)
    assert quota.period_of(datetime(2026, 12, 31, 23, 59)) == "2026-12"


def test_usage_cache(app, std_site):
    from tests.fixtures.tracking import seed_usage

    cache = quota.UsageCache(ttl=3600)
    site_id = std_site.site.id
    period = quota.period_of(datetime.now(UTC))
    seed_usage(app, site_id, 7, shard=1)
    with db(app):
        assert cache.used(site_id, period) == 7
    seed_usage(app, site_id, 5, shard=2)
    with db(app):
        assert cache.used(site_id, period) == 7  # cached
        cache.add(site_id, period, 3)
        assert cache.used(site_id, period) == 10  # this worker's own writes
        cache.add(site_id, "1999-01", 3)  # nothing cached: nothing to move
        cache.clear()
        assert cache.used(site_id, period) == 12
        assert quota.UsageCache(ttl=0).used(site_id, "1999-01") == 0


def test_ingest_result_body():
    assert IngestResult(3).body() == {"success": True, "count": 3}
    assert IngestResult(0, sampled=True).body() == {"success": True, "count": 0, "sampled": True}
    assert IngestResult(2, duplicate=True, sampled=True).body() == {
        "success": True, "count": 2, "sampled": True, "duplicate": True}


# --- tally ----------------------------------------------------------------------------------

def test_tally_upserts_per_site_day_and_reason(app, std_site, free_site):
    with db(app):
        tally.add(std_site.site.id, "bot")
        tally.add(std_site.site.id, "bot", 4)
        tally.add(std_site.site.id, "sampled", 0)  # nothing to count: no row
        tally.add(std_site.site.id, "bot", 2, day=date(2026, 1, 1))
        tally.add(free_site.site.id, "bot")
        tally.add_quietly(free_site.site.id, "duplicate")
        rows = {(r.site_id, r.day, r.reason): r.count for r in IngestTally.select()}
    today = datetime.now(UTC).date()
    assert rows == {(std_site.site.id, today, "bot"): 5,
                    (std_site.site.id, date(2026, 1, 1), "bot"): 2,
                    (free_site.site.id, today, "bot"): 1,
                    (free_site.site.id, today, "duplicate"): 1}
    assert tallies(app, std_site.site.id) == {"bot": 7}


# --- bodies ---------------------------------------------------------------------------------

def test_gunzip_limits():
    data = b"x" * 1000
    assert gunzip(gzip.compress(data), 1000) == data
    with pytest.raises(ApiError) as over:
        gunzip(gzip.compress(data), 999)
    assert (over.value.status, over.value.tally_reason) == (413, "rejected_413")
    with pytest.raises(ApiError) as truncated:
        gunzip(gzip.compress(data)[:-4], 1000)
    assert (truncated.value.status, truncated.value.message) == (
        400, "The gzip body is truncated.")
    with pytest.raises(ApiError) as corrupt:
        gunzip(zlib.compress(data), 1000)  # zlib, not gzip, framing
    assert corrupt.value.status == 400
    assert gunzip(gzip.compress(b""), 0) == b""


@pytest.mark.parametrize(("body", "message"), [
    (b"[1]", "The request body must be a JSON object, not an array."),
    (b"1.5", "The request body must be a JSON object, not a number."),
    (b'{"a": NaN}', None), (b'{"a": 1e400}', f"a: {NUMBER_TOO_LARGE}"), (b'"\\udfff"', None),
])
def test_json_object_is_strict(body, message):
    with pytest.raises(ApiError) as error:
        json_object(body)
    assert error.value.status == 400
    if message:
        assert error.value.message == message
    else:
        assert error.value.message.startswith("The request body is not valid JSON: ")


def test_json_object_keeps_numbers_as_json_has_them():
    assert json_object(b'{"a": 1, "b": 1.5, "c": 18446744073709551615}') == {
        "a": 1, "b": 1.5, "c": 18446744073709551615}


# --- fields ---------------------------------------------------------------------------------

def test_json_object_problem_edges():
    problem = JSONObject.problem
    assert problem(None) is None
    assert problem({}) is None
    at = {"p": "x" * (MAX_PROPERTIES_BYTES - 8)}
    assert len(orjson.dumps(at)) == MAX_PROPERTIES_BYTES and problem(at) is None
    over = {"p": "x" * (MAX_PROPERTIES_BYTES - 7)}
    assert problem(over) == "Too large: at most 16384 bytes as JSON, got 16385."
    assert problem({"a": ["\x00"]}) == "NUL characters are not allowed."
    assert problem(deep_value(MAX_JSON_DEPTH)) is None
    assert problem(deep_value(MAX_JSON_DEPTH + 1)) == JSONObject.TOO_DEEP
    assert problem(deep_value(300)) == JSONObject.TOO_DEEP  # more than orjson can write
    wide = {f"k{i}": [[{}]] for i in range(200)}  # many brackets, little depth
    assert problem(wide) is None
    assert problem({"s": "[{" * 500}) is None  # brackets inside strings are not depth


def test_nesting_exceeds():
    assert not nesting_exceeds({}, 1)
    assert nesting_exceeds({"a": {}}, 1)
    assert not nesting_exceeds({"a": [1, {"b": []}]}, 4)
    assert nesting_exceeds({"a": [1, {"b": []}]}, 3)
    assert not nesting_exceeds(deep_value(5000), 5000)  # iterative: no RecursionError
    assert nesting_exceeds(deep_value(5000), 4999)


def test_format_validation_messages():
    messages = {"events": {3: {"type": ["Must be one of: a."]}}, "id": ["Bad.", "Worse."]}
    assert format_validation_messages(messages) == (
        "events.3.type: Must be one of: a.; id: Bad. Worse.")
    assert format_validation_messages(["Top."]) == "Top."
    with pytest.raises(ValidationError) as error:
        from blueprints.events import BatchSchema

        BatchSchema().load({})
    text = format_validation_messages(error.value.messages)
    for name in ("id", "sessionId", "anonymousId", "timestamp", "events"):
        assert f"{name}: Missing data for required field." in text
