"""app.analytics.describe against a small hand-built event set whose figures are worked out by
hand here (the comments say how)."""
import hashlib
from datetime import date, datetime, timedelta
from typing import Any

import pytest

from app.analytics import describe, vocabulary
from app.analytics.errors import ArgumentError
from app.analytics.period import Period
from app.analytics.reading import reading
from models import Site
from tests.fixtures import funnel as funnel_data
from tests.fixtures.funnel import row, store

site = funnel_data.site  # a fixture: the funnel tests' site

# Berlin is UTC+1 in March until the 29th, UTC+2 after: the local days 1-31 March run from
# 2026-02-28 23:00 to 2026-03-31 22:00 UTC.
BERLIN_MARCH = Period(date(2026, 3, 1), date(2026, 3, 31), "Europe/Berlin")


@pytest.fixture
def events(site):
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
    # Keys of goals and custom events, the most carried first: file on Download s1 (1) and s2
    # (10) = 11; plan on Signup s1, Download s1 and Trial s3, 1 each = 3 (ties by name).
    assert found["properties"] == [
        {"key": "file", "count": 11, "event_names": ["Download"], "event_types": ["custom"],
         "count_by_name": {"Download": 11}},
        {"key": "plan", "count": 3, "event_names": ["Download", "Signup", "Trial"],
         "event_types": ["custom", "goal"],
         "count_by_name": {"Download": 1, "Signup": 1, "Trial": 1}},
    ]
    assert found["first_event"] == "2026-02-28T23:30:00Z"
    assert found["last_event"] == "2026-03-20T12:05:00Z"
    assert found["estimated"] is True
    assert found["metrics"] == vocabulary.describe()["metrics"]
    assert found["dimensions"] == vocabulary.describe()["dimensions"]
    assert "values" not in found


def long_text(length: int) -> str:
    """Text that does not compress (hex digests), as properties at their largest may be."""
    digests = (hashlib.sha256(str(index).encode()).hexdigest() for index in range(length // 64 + 1))
    return "".join(digests)[:length]


@pytest.fixture
def carriers(site):
    latest = datetime(2026, 3, 20, 10, 0)
    store([
        # Download's latest 200 events carry `file` only.
        *(row(site, f"d{index}", f"d{index}", "custom", latest + timedelta(seconds=index),
              name="Download", properties={"file": "a.pdf"}) for index in range(200)),
        # An older Download, sampled (weight 2), is the only one with `coupon`.
        row(site, "s1", "v1", "custom", datetime(2026, 3, 5, 9, 0), name="Download",
            properties={"file": "b.pdf", "coupon": "SPRING"}, weight=2),
        # `coupon` and `file` on a goal too; `plan` on a goal and a custom event both named
        # Signup.
        row(site, "s2", "v2", "goal", datetime(2026, 3, 6, 9, 0), name="Signup",
            properties={"plan": "pro", "coupon": "SPRING", "file": "c.pdf"}),
        row(site, "s3", "v3", "custom", datetime(2026, 3, 6, 9, 5), name="Signup",
            properties={"plan": "free"}),
        # Properties that are not objects have no keys.
        row(site, "s4", "v4", "goal", datetime(2026, 3, 7, 9, 0), name="Signup",
            properties=["plan", "coupon"]),
        row(site, "s4", "v4", "custom", datetime(2026, 3, 7, 9, 1), name="Share",
            properties="plan"),
        # Properties longer than event_named_properties holds (0013: an index entry holds at
        # most 2,704 bytes) are stored, and read from the table.
        row(site, "s5", "v5", "custom", datetime(2026, 3, 8, 9, 0), name="Search",
            properties={"query": long_text(15_000)}),
        # Neither a page view's keys nor keys outside the period (Berlin's March).
        row(site, "s6", "v6", "pageview", datetime(2026, 3, 9, 9, 0), "/",
            properties={"utm_source": "news"}),
        row(site, "s6", "v6", "goal", datetime(2026, 3, 31, 22, 30), name="Signup",
            properties={"late": 1}),
    ])
    return site


def test_property_keys_of_every_named_event_with_their_counts(carriers):
    # file: 200 Downloads + the sampled one (2) = 202, and the Signup goal (1) = 203. coupon:
    # the sampled Download (2), which the latest 200 Downloads do not include, and the Signup
    # goal (1) = 3. plan: the Signup goal and the Signup custom event, 1 each = 2. query: the
    # long Search (1).
    assert describe.describe(carriers, BERLIN_MARCH)["properties"] == [
        {"key": "file", "count": 203, "event_names": ["Download", "Signup"],
         "event_types": ["custom", "goal"], "count_by_name": {"Download": 202, "Signup": 1}},
        {"key": "coupon", "count": 3, "event_names": ["Download", "Signup"],
         "event_types": ["custom", "goal"], "count_by_name": {"Download": 2, "Signup": 1}},
        {"key": "plan", "count": 2, "event_names": ["Signup"],
         "event_types": ["custom", "goal"], "count_by_name": {"Signup": 2}},
        {"key": "query", "count": 1, "event_names": ["Search"], "event_types": ["custom"],
         "count_by_name": {"Search": 1}},
    ]


def test_at_most_max_names_keys_and_names_of_a_key(carriers, monkeypatch):
    monkeypatch.setattr(describe, "MAX_NAMES", 1)
    # The most carried key, file, with its most carrying name; its count and types are still
    # those of all the events carrying it.
    assert describe.describe(carriers, BERLIN_MARCH)["properties"] == [
        {"key": "file", "count": 203, "event_names": ["Download"],
         "event_types": ["custom", "goal"], "count_by_name": {"Download": 202}}]


def test_totals_count_what_max_names_leaves_out(carriers, monkeypatch):
    monkeypatch.setattr(describe, "MAX_NAMES", 1)
    found = describe.describe(carriers, BERLIN_MARCH)
    # Keys: file, coupon, plan, query (the test above). Names: the goal Signup (the late one is
    # outside March); the custom events Download, Signup, Share and Search.
    assert [len(found[key]) for key in ("goals", "custom_events", "properties")] == [1, 1, 1]
    assert (found["goals_total"], found["custom_events_total"], found["properties_total"]) == (
        1, 4, 4)


def test_a_keys_count_beyond_a_reals_precision(site):
    # 2**24 + 1 as a PostgreSQL `real` (the weight column's type) is 2**24: the sum is a double.
    store([row(site, "s1", "v1", "goal", datetime(2026, 3, 10, 9, 0), name="Signup",
               properties={"plan": "pro"}, weight=2 ** 24),
           row(site, "s2", "v2", "goal", datetime(2026, 3, 10, 9, 1), name="Signup",
               properties={"plan": "free"})])
    assert describe.describe(site, BERLIN_MARCH)["properties"] == [
        {"key": "plan", "count": 2 ** 24 + 1, "event_names": ["Signup"],
         "event_types": ["goal"], "count_by_name": {"Signup": 2 ** 24 + 1}}]


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
