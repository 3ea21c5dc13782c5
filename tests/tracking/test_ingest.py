"""Unit tests of the ingest steps (app.tracking.ingest, no HTTP): event time, plan gates,
cleaning, sampling, the answer's body."""
from datetime import UTC, datetime, timedelta

import orjson
import pytest

from app.tracking import ingest, quota
from app.tracking.ingest import IngestResult
from app.web.schema import (
    MAX_EPOCH_MS,
    MAX_EVENT_AGE_MS,
)
from models import Site

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


def test_ingest_result_body():
    assert IngestResult(3).body() == {"success": True, "count": 3}
    assert IngestResult(0, sampled=True).body() == {"success": True, "count": 0, "sampled": True}
    assert IngestResult(2, duplicate=True, sampled=True).body() == {
        "success": True, "count": 2, "sampled": True, "duplicate": True}
