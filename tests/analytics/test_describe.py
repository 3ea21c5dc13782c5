"""app.analytics.describe against a small hand-built event set whose figures are worked out by
hand here (the comments say how)."""
from datetime import date, datetime
from typing import Any

import pytest

from app.analytics import describe, vocabulary
from app.analytics.base import ArgumentError, Period, reading
from models import Site
from tests.analytics.test_funnel import row, site, store  # noqa: F401  (site: a fixture)

# Berlin is UTC+1 in March until the 29th, UTC+2 after: the local days 1-31 March run from
# 2026-02-28 23:00 to 2026-03-31 22:00 UTC.
BERLIN_MARCH = Period(date(2026, 3, 1), date(2026, 3, 31), "Europe/Berlin")


@pytest.fixture
def events(site):  # noqa: F811
    other_site = Site.create(domain="other.example")
    store([
        row(site, "s1", "v1", "pageview", datetime(2026, 3, 10, 10, 0), "/pricing",
            properties={"utm_source": "news"}),
        row(site, "s1", "v1", "scroll", datetime(2026, 3, 10, 10, 1), "/pricing",
            properties={"depth": 50}),
        row(site, "s1", "v1", "goal", datetime(2026, 3, 10, 10, 2), name="Signup",
            properties={"plan": "pro"}),
        row(site, "s1", "v1", "custom", datetime(2026, 3, 10, 10, 3), name="Download",
            properties={"file": "a.pdf", "plan": "pro"}),
        # A sampled session: each event stands for 10.
        row(site, "s2", "v2", "pageview", datetime(2026, 3, 12, 8, 0), "/docs", weight=10),
        row(site, "s2", "v2", "custom", datetime(2026, 3, 12, 8, 1), name="Download",
            properties={"file": "b.pdf"}, weight=10),
        row(site, "s2", "v2", "goal", datetime(2026, 3, 12, 8, 2), name="Signup", weight=10),
        # 23:30 UTC on 28 February is 00:30 on 1 March in Berlin: inside.
        row(site, "s3", "v3", "pageview", datetime(2026, 2, 28, 23, 30), "/"),
        row(site, "s3", "v3", "pageview", datetime(2026, 3, 20, 12, 0), "/about"),
        row(site, "s3", "v3", "custom", datetime(2026, 3, 20, 12, 1), name="Share"),
        row(site, "s3", "v3", "goal", datetime(2026, 3, 20, 12, 2), name="Trial",
            properties={"plan": "free"}),
        row(site, "s3", "v3", "click", datetime(2026, 3, 20, 12, 5), "/about",
            properties={"element": "a"}),
        # Outside Berlin's March (23:59 on 28 February, 00:30 on 1 April), and another site.
        row(site, "s9", "v9", "pageview", datetime(2026, 2, 28, 22, 59), "/old",
            properties={"old": 1}),
        row(site, "s9", "v9", "goal", datetime(2026, 3, 31, 22, 30), name="Late"),
        row(other_site, "s8", "v8", "goal", datetime(2026, 3, 10), name="Elsewhere",
            properties={"elsewhere": 1}),
    ])
    return site


def test_what_the_site_has(events):
    found = describe.describe(events, BERLIN_MARCH)
    assert found["timezone"] == "Europe/Berlin"
    # pageviews 1 + 10 + 2 = 13; custom: Download 1 + 10, Share 1 = 12; goal: Signup 1 + 10,
    # Trial 1 = 12; click 1; scroll 1 (ties by name).
    assert list(found["events_by_type"].items()) == [
        ("pageview", 13), ("custom", 12), ("goal", 12), ("click", 1), ("scroll", 1)]
    assert found["goals"] == [{"name": "Signup", "count": 11}, {"name": "Trial", "count": 1}]
    assert found["custom_events"] == [{"name": "Download", "count": 11},
                                      {"name": "Share", "count": 1}]
    # Keys of goals and custom events: file on Download; plan on Download, Signup and Trial.
    assert found["properties"] == [
        {"key": "file", "event_names": ["Download"], "event_types": ["custom"]},
        {"key": "plan", "event_names": ["Download", "Signup", "Trial"],
         "event_types": ["custom", "goal"]},
    ]
    assert found["first_event"] == "2026-02-28T23:30:00Z"
    assert found["last_event"] == "2026-03-20T12:05:00Z"
    assert found["estimated"] is True
    assert found["metrics"] == vocabulary.describe()["metrics"]
    assert found["dimensions"] == vocabulary.describe()["dimensions"]
    assert "values" not in found


def test_property_keys_of_each_names_latest_events(events, monkeypatch):
    monkeypatch.setattr(describe, "LATEST_PER_NAME", 1)
    # The latest Download (12 March, s2) has `file` only; the latest Signup (s2) has no
    # properties; Trial's only event has `plan`.
    assert describe.describe(events, BERLIN_MARCH)["properties"] == [
        {"key": "file", "event_names": ["Download"], "event_types": ["custom"]},
        {"key": "plan", "event_names": ["Trial"], "event_types": ["goal"]},
    ]


def test_an_empty_period(events):
    found = describe.describe(events, Period(date(2026, 5, 1), date(2026, 5, 31)))
    assert found["timezone"] == "UTC"
    assert (found["events_by_type"], found["goals"], found["custom_events"],
            found["properties"]) == ({}, [], [], [])
    assert (found["first_event"], found["last_event"], found["estimated"]) == (None, None, False)


def values(of: Site, dimension: str, **options: Any) -> dict[str, Any]:
    with reading():
        return describe.describe(of, BERLIN_MARCH, dimension, **options)["values"]


def test_a_dimensions_values(events):
    # Visitors per goal: Signup v1 (1) and v2 (weight 10) = 11, Trial v3 = 1.
    assert values(events, "event:goal") == {
        "dimension": "event:goal", "search": None, "total_values": 2,
        "values": [{"value": "Signup", "visitors": 11}, {"value": "Trial", "visitors": 1}]}
    assert values(events, "event:goal", limit=1)["values"] == [
        {"value": "Signup", "visitors": 11}]
    # Entry pages: /pricing (v1), /docs (v2), / (v3: its 23:30 UTC view is 1 March in
    # Berlin); `search` is case-insensitive.
    assert values(events, "visit:entry_page", search="/DOC") == {
        "dimension": "visit:entry_page", "search": "/DOC", "total_values": 1,
        "values": [{"value": "/docs", "visitors": 10}]}
    # plan: pro (v1), free (v3); only "pro" contains "Pr" in any case.
    assert values(events, "event:props:plan", search="Pr") == {
        "dimension": "event:props:plan", "search": "Pr", "total_values": 1,
        "values": [{"value": "pro", "visitors": 1}]}


@pytest.mark.parametrize(("options", "message"), [
    ({"dimension": "visit:contry"},
     "Unknown dimension 'visit:contry'. Did you mean 'visit:country'? Valid dimensions: "),
    ({"dimension": "visit:source", "search": ""},
     "`search` must be a non-empty string of at most 200 printable characters."),
    ({"dimension": "visit:source", "search": "a\x00"},
     "`search` must be a non-empty string of at most 200 printable characters."),
    ({"dimension": "time:day", "search": "2026"},
     "`search` does not apply to time:day: narrow the days with `from`/`to` or `period` "
     "instead."),
    ({"search": "google"},
     "`search` narrows the values of a `dimension`: give one too, such as 'visit:source'."),
    ({"dimension": "visit:source", "limit": 0}, "`limit` must be an integer from 1 to 1000."),
])
def test_bad_arguments(events, options, message):
    with pytest.raises(ArgumentError) as error, reading():
        describe.describe(events, BERLIN_MARCH, **options)
    assert str(error.value).startswith(message)
