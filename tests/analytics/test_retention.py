"""The `retention` tool over tests/analytics/journeys.py's nine weeks, its cohort tables worked
out by hand from the visits listed there, through /api/mcp; and its warning about storage-free
visitors, over batches stored through /api/events."""
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from app.analytics.retention import STORAGE_FREE
from app.tracking import pipeline
from models import database
from tests.fixtures.helpers import tool_result
from tests.fixtures.journeys import WEIGHTED, ZONE, place, today, week_start
from tests.fixtures.tracking import CHROME_UA, batch


@pytest.fixture
def call(app, std_site):
    """Call `retention` for std_site with the given arguments; the tool's result."""
    client = app.test_client()

    def call(**arguments: Any) -> dict[str, Any]:
        return tool_result(client, std_site.server_headers(), "retention", arguments)

    return call


@pytest.fixture
def ask(app, std_site, call):
    """`call`, std_site holding tests/fixtures/journeys.py's visits."""
    with app.app_context(), database.connection_context():
        place(std_site.site)
    return call


def answer(ask, **arguments: Any) -> dict[str, Any]:
    result = ask(**arguments)
    assert result["isError"] is False, result
    return result["structuredContent"]


def table(result: dict[str, Any]) -> list[tuple[str, int, list[int]]]:
    return [(row["cohort"], row["visitors"], row["retained"]) for row in result["cohorts"]]


def test_weekly_first_visit_cohorts_of_the_default_range(ask):
    result = answer(ask)
    assert (result["interval"], result["cohort"], result["return_on"]) == (
        "week", "first_visit", None)
    assert result["timezone"] == "Europe/Berlin"
    assert (result["from"], result["current_interval"]) == (week_start(7), week_start(0))
    # A (-7) back every week; B (-6) never back; C's first visit (-8) is before the range;
    # D (-5) back in -3; E (-2) back in -1. Cells of weeks after the current one are absent.
    assert table(result) == [
        (week_start(7), 1, [1] * 8), (week_start(6), 1, [1, 0, 0, 0, 0, 0, 0]),
        (week_start(5), 1, [1, 0, 1, 0, 0, 0]), (week_start(4), 0, [0] * 5),
        (week_start(3), 0, [0] * 4), (week_start(2), 1, [1, 1, 0]),
        (week_start(1), 0, [0, 0]), (week_start(0), 0, [0])]
    assert result["cohorts"][0]["retention_rate"] == [100.0] * 8
    assert result["cohorts"][3]["retention_rate"] == [None] * 5
    # per cell: retained over the cohorts that have it / their visitors
    assert result["average"]["retention_rate"] == [100.0, 50.0, 50.0, 33.3, 33.3, 33.3, 50.0,
                                                   100.0]
    assert result["estimated"] is False
    text = ask()["content"][0]["text"]
    assert "Retention by week" in text and week_start(7) in text


def test_any_visit_cohorts_count_a_visitor_in_every_week_it_came(ask):
    result = answer(ask, cohort="any_visit", intervals=2)
    # week -5: A, C (first seen in -8) and D; of them A in -4; A, C and D in -3
    assert table(result) == [
        (week_start(7), 1, [1, 1, 1]), (week_start(6), 2, [2, 1, 1]),
        (week_start(5), 3, [3, 1, 3]), (week_start(4), 1, [1, 1, 1]),
        (week_start(3), 3, [3, 1, 1]), (week_start(2), 2, [2, 2, 1]),
        (week_start(1), 2, [2, 1]), (week_start(0), 1, [1])]


def test_returns_on_a_page_and_filters_on_the_placing_visits(ask):
    pricing = answer(ask, return_on={"page": "/pricing"})
    # A saw /pricing in -4 only (cell 3); D in -5 and -3; E (-2) in -1
    assert table(pricing)[:3] == [(week_start(7), 1, [0, 0, 0, 1, 0, 0, 0, 0]),
                                  (week_start(6), 1, [0] * 7),
                                  (week_start(5), 1, [1, 0, 1, 0, 0, 0])]
    assert table(pricing)[5] == (week_start(2), 1, [0, 1, 0])
    goal = answer(ask, return_on={"goal": "Signup"}, interval="month", period="90d")
    this_month = today().isoformat()[:7]
    assert goal["interval"] == "month" and goal["current_interval"] == this_month
    assert goal["cohorts"][-1]["cohort"] == this_month and goal["to"][:7] == this_month
    german = answer(ask, filters=[["is", "visit:country", ["DE"]]])
    # only D's first visit (-5) came from DE
    assert [row["visitors"] for row in german["cohorts"]] == [0, 0, 1, 0, 0, 0, 0, 0]
    assert german["cohorts"][2]["retained"] == [1, 0, 1, 0, 0, 0]


def test_has_done_and_has_not_done_select_the_placing_visits(ask):
    signed_up = ["is", "event:goal", ["Signup"]]
    # first visits with a Signup: D's (-5) alone (A's came in -4, E's in -1); D back in -3
    done = answer(ask, filters=[["has_done", signed_up]])
    assert [row["visitors"] for row in done["cohorts"]] == [0, 0, 1, 0, 0, 0, 0, 0]
    assert done["cohorts"][2]["retained"] == [1, 0, 1, 0, 0, 0]
    # without one: A (-7, back every week), B (-6, never back), E (-2, back in -1)
    not_done = answer(ask, filters=[["has_not_done", signed_up]])
    assert table(not_done) == [
        (week_start(7), 1, [1] * 8), (week_start(6), 1, [1, 0, 0, 0, 0, 0, 0]),
        (week_start(5), 0, [0] * 6), (week_start(4), 0, [0] * 5),
        (week_start(3), 0, [0] * 4), (week_start(2), 1, [1, 1, 0]),
        (week_start(1), 0, [0, 0]), (week_start(0), 0, [0])]
    # its filter is on events: a visit:* one is refused, as in query
    refused = ask(filters=[["has_done", ["is", "visit:country", ["DE"]]]])
    assert refused["isError"] is True and "event:" in refused["content"][0]["text"]


def test_a_range_of_days_cuts_at_today(ask):
    last = today().isoformat()
    result = answer(ask, interval="day", **{"from": week_start(1), "to": last}, intervals=3)
    assert (result["from"], result["to"], result["current_interval"]) == (
        week_start(1), last, last)
    # a cohort per day; the later ones have fewer cells begun: today's has only its own
    assert [len(row["retained"]) for row in result["cohorts"]][-4:] == [4, 3, 2, 1]
    visitors = {row["cohort"]: row["visitors"] for row in result["cohorts"]}
    assert sum(visitors.values()) == 0  # A's first visit is week -7: no first visit here
    assert answer(ask, interval="day", cohort="any_visit", **{"from": last, "to": last}
                  )["cohorts"] == [{"cohort": last, "visitors": 1, "retained": [1],
                                    "retention_rate": [100.0]}]


@pytest.mark.parametrize(("arguments", "says"), [
    ({"interval": "fortnight"}, "Unknown interval 'fortnight'. Valid intervals: day, week, "
                                "month."),
    ({"intervals": 32}, "`intervals` must be a whole number from 1 to 31"),
    ({"cohort": "first"}, "Did you mean 'first_visit'?"),
    ({"return_on": {"page": "pricing"}}, "`return_on.page` must be a URL path"),
    ({"return_on": {"pages": "/pricing"}}, "`return_on` has the unknown key 'pages'"),
    ({"cohorts": "any_visit"}, "Unknown argument 'cohorts' of retention. Did you mean "
                               "'cohort'?"),
])
def test_every_bad_argument_is_a_tool_error_that_teaches(ask, arguments, says):
    assert ask(intervals=31)["isError"] is False  # the valid variant
    result = ask(**arguments)
    assert result["isError"] is True
    assert says in result["content"][0]["text"], result["content"][0]["text"]


def test_a_sampled_visitor_weighs_its_weight(app, std_site, ask):
    with app.app_context(), database.connection_context():
        place(std_site.site, WEIGHTED, weight=2.0)
    result = answer(ask)
    # F (weight 2) first came in week -1 and came back in week 0
    assert table(result)[6] == (week_start(1), 2, [2, 2])
    assert result["estimated"] is True


# --- storage-free visitors (data-storage="false"): `warnings` ----------------------------------

ONE_UNFOLLOWED = STORAGE_FREE.format(count=1, visitors="visitor")
OWN_HEX_ID = "0123456789abcdef0123456789abcdef"  # a client's own id, shaped like a derived one


class Clock:
    """The receive time of the next request (pipeline.utcnow): None, the real one."""

    def __init__(self) -> None:
        self.now: datetime | None = None

    def __call__(self) -> datetime:
        return self.now or datetime.now(UTC).replace(tzinfo=None)


@pytest.fixture
def berlin(app, std_site, monkeypatch) -> tuple[Any, Clock]:
    """(post a batch through /api/events, its clock), the site in ZONE."""
    with app.app_context(), database.connection_context():
        std_site.site.timezone = ZONE
        std_site.site.save()
    clock = Clock()
    monkeypatch.setattr(pipeline, "utcnow", clock)
    client = app.test_client()

    def post(anonymous_id: str, session_id: str, address: str = "203.0.113.7") -> None:
        response = client.post("/api/events",
                               json=batch(anonymousId=anonymous_id, sessionId=session_id),
                               headers=std_site.write_headers(**{"User-Agent": CHROME_UA}),
                               environ_base={"REMOTE_ADDR": address})
        assert response.status_code == 200, response.get_json()

    return post, clock


def test_storage_free_visitors_are_said_in_warnings(berlin, call):
    post, _clock = berlin
    day = {"interval": "day", "from": today().isoformat(), "to": today().isoformat()}
    post("anon-1", "sess-1")
    post(OWN_HEX_ID, OWN_HEX_ID[::-1])  # not storage-free: ingest derived no id
    followed = answer(call, **day)
    assert followed["cohorts"][0]["visitors"] == 2 and "warnings" not in followed
    post("-", "-")
    result = call(**day)
    assert result["structuredContent"]["cohorts"][0]["visitors"] == 3
    assert result["structuredContent"]["warnings"] == [ONE_UNFOLLOWED]
    assert "1 visitor came without storage" in ONE_UNFOLLOWED
    assert result["content"][0]["text"].endswith(f"Warning: {ONE_UNFOLLOWED}")


def test_visits_across_the_ranges_first_instant(berlin, call):
    """Yesterday's visits that began the day before (local midnight is 22:00 or 23:00 UTC, so a
    storage-free visit, whose visitor lasts a UTC day, can cross it): their rows derived from
    their events in the range carry the mark too, and a range holding only unmarked ones reads
    on PostgreSQL (a VALUES column of NULLs alone is text there)."""
    post, clock = berlin
    yesterday = today() - timedelta(days=1)
    midnight = (datetime(yesterday.year, yesterday.month, yesterday.day, tzinfo=ZoneInfo(ZONE))
                .astimezone(UTC).replace(tzinfo=None))
    day = {"interval": "day", "cohort": "any_visit", "from": yesterday.isoformat(),
           "to": yesterday.isoformat()}

    def across(anonymous_id: str, session_id: str) -> None:
        for moment in (midnight - timedelta(minutes=5), midnight + timedelta(minutes=5)):
            clock.now = moment
            post(anonymous_id, session_id, address="198.51.100.23")
        clock.now = None

    across("anon-1", "sess-1")
    followed = answer(call, **day)
    assert followed["cohorts"][0]["visitors"] == 1 and "warnings" not in followed
    across("-", "-")
    result = answer(call, **day)
    assert result["cohorts"][0]["visitors"] == 2 and result["warnings"] == [ONE_UNFOLLOWED]
