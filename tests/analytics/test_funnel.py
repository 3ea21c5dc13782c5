"""app.analytics.funnel against small hand-built event sets whose figures are worked out by
hand in each test (the comments say why each unit reaches how far)."""
from datetime import datetime, timedelta
from typing import Any

import pytest

from app.analytics import funnel
from app.analytics.errors import ArgumentError
from app.analytics.filters import parse_filters
from app.analytics.reading import reading
from models import Site
from tests.fixtures import funnel as funnel_data
from tests.fixtures.funnel import PERIOD, T0, row, store

site = funnel_data.site  # a fixture, shared with test_describe


def minutes(count: float) -> datetime:
    return T0 + timedelta(minutes=count)


def run(site: Site, steps: list[dict[str, str]], unit: str = "visit", window_hours: int = 24,
        filters: Any = None) -> dict[str, Any]:
    """The funnel as the tool runs it: validated arguments, in one read transaction."""
    with reading():
        return funnel.funnel(site, PERIOD, funnel.validate(steps, unit, window_hours), unit,
                             window_hours, parse_filters(filters, visit_only=True))


def figures(result: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(step["count"], step["conversion_rate"], step["step_conversion_rate"],
             step["dropoff"]) for step in result["steps"]]


PAGE_STEPS = [{"page": "/pricing"}, {"page": "/docs/*"}, {"goal": "Signup"},
              {"event": "Download"}]


def test_visits_through_page_pattern_goal_and_event_steps(site):
    other_site = Site.create(domain="other.example")
    store([
        # s1: every step in order -> reaches step 4.
        row(site, "s1", "v1", "pageview", minutes(0), "/pricing"),
        row(site, "s1", "v1", "pageview", minutes(1), "/docs/start"),
        row(site, "s1", "v1", "goal", minutes(2), name="Signup"),
        row(site, "s1", "v1", "custom", minutes(3), name="Download"),
        # s2: /docs/a/b is not /docs/* (`*` stops at `/`) -> step 1 only.
        row(site, "s2", "v2", "pageview", minutes(0), "/pricing"),
        row(site, "s2", "v2", "pageview", minutes(1), "/docs/a/b"),
        row(site, "s2", "v2", "goal", minutes(2), name="Signup"),
        # s3: docs before pricing -> the docs view is out of order -> step 1 only.
        row(site, "s3", "v3", "pageview", minutes(0), "/docs/start"),
        row(site, "s3", "v3", "pageview", minutes(1), "/pricing"),
        row(site, "s3", "v3", "goal", minutes(2), name="Signup"),
        # s4: a Signup before the docs view does not count, the one after does -> step 3; its
        # "Download" is a goal, not a custom event -> not step 4.
        row(site, "s4", "v4", "pageview", minutes(0), "/pricing"),
        row(site, "s4", "v4", "goal", minutes(3), name="Signup"),
        row(site, "s4", "v4", "pageview", minutes(5), "/docs/intro"),
        row(site, "s4", "v4", "goal", minutes(6), name="Signup"),
        row(site, "s4", "v4", "goal", minutes(7), name="Download"),
        # s5: a page view with a query string (its path: /pricing); its "Signup" is a custom
        # event, not a goal -> step 2.
        row(site, "s5", "v5", "pageview", minutes(0), "/pricing?plan=pro"),
        row(site, "s5", "v5", "pageview", minutes(1), "/docs/x"),
        row(site, "s5", "v5", "custom", minutes(2), name="Signup"),
        # s6: never on /pricing -> nowhere.
        row(site, "s6", "v6", "pageview", minutes(0), "/blog"),
        row(site, "s6", "v6", "goal", minutes(1), name="Signup"),
        # s7: visitor v1's second visit, /pricing only -> step 1 (visits count separately).
        row(site, "s7", "v1", "pageview", minutes(30), "/pricing"),
        # Outside the period, and another site's visit: not counted.
        row(site, "s8", "v8", "pageview", datetime(2026, 4, 1), "/pricing"),
        row(other_site, "s9", "v9", "pageview", minutes(0), "/pricing"),
        row(other_site, "s9", "v9", "pageview", minutes(1), "/docs/start"),
    ])
    result = run(site, PAGE_STEPS)
    # Step 1: s1, s2, s3, s4, s5, s7 = 6; step 2: s1, s4, s5 = 3; step 3: s1, s4 = 2;
    # step 4: s1 = 1. Rates: 3/6, 2/6, 1/6 of step 1; 3/6, 2/3, 1/2 of the step before.
    assert figures(result) == [(6, 100.0, None, None), (3, 50.0, 50.0, 3),
                               (2, 33.3, 66.7, 1), (1, 16.7, 50.0, 1)]
    assert [step["label"] for step in result["steps"]] == [
        "Visit /pricing", "Visit /docs/*", "Goal Signup", "Event Download"]
    assert result["unit"] == "visit" and result["window_hours"] is None
    assert result["estimated"] is False

    # `**` crosses `/`: /docs/** matches /docs/start (s1, s3), /docs/a/b (s2), /docs/intro (s4),
    # /docs/x (s5) = 5; a goal Signup at or after it: s1, s2, s3 (docs at 0, Signup at 2), s4
    # (docs at 5, Signup at 6) = 4; s5's Signup is a custom event.
    labelled = run(site, [{"page": "/docs/**", "label": "Docs"}, {"goal": "Signup"}])
    assert figures(labelled) == [(5, 100.0, None, None), (4, 80.0, 80.0, 1)]
    assert labelled["steps"][0]["label"] == "Docs"


def test_a_visit_needs_a_page_view(site):
    store([
        # Visits whose first step is a goal: s1 and s2 reach it; s1 downloads after it.
        row(site, "s1", "v1", "pageview", minutes(0), "/"),
        row(site, "s1", "v1", "goal", minutes(1), name="Signup"),
        row(site, "s1", "v1", "custom", minutes(2), name="Download"),
        row(site, "s2", "v2", "pageview", minutes(0), "/"),
        row(site, "s2", "v2", "goal", minutes(1), name="Signup"),
        # A Download before the Signup does not count.
        row(site, "s2", "v2", "custom", minutes(0.5), name="Download"),
        # A session without any page view is no visit; an event without a session neither.
        row(site, "s3", "v3", "goal", minutes(1), name="Signup"),
        row(site, "s3", "v3", "custom", minutes(2), name="Download"),
        row(site, None, "v4", "goal", minutes(1), name="Signup"),
        row(site, None, "v4", "custom", minutes(2), name="Download"),
    ])
    result = run(site, [{"goal": "Signup"}, {"event": "Download"}])
    # Step 1: s1, s2 = 2; step 2: s1 = 1.
    assert figures(result) == [(2, 100.0, None, None), (1, 50.0, 50.0, 1)]


def test_visitors_within_their_window(site):
    at = datetime(2026, 3, 10, 10, 0)
    next_day = at + timedelta(days=1)
    store([
        # v1: /pricing in one visit, Signup 23 h later in another -> within 24 h.
        row(site, "s1a", "v1", "pageview", at, "/pricing"),
        row(site, "s1b", "v1", "pageview", next_day - timedelta(hours=2), "/pricing"),
        row(site, "s1b", "v1", "goal", next_day - timedelta(hours=1), name="Signup"),
        # v2: Signup exactly 24 h after its /pricing view (the window is inclusive), in a
        # session without a page view.
        row(site, "s2a", "v2", "pageview", at, "/pricing"),
        row(site, "s2b", "v2", "goal", next_day, name="Signup"),
        # v3: Signup one second past 24 h after its EARLIEST /pricing view; its later /pricing
        # view does not move the window.
        row(site, "s3a", "v3", "pageview", at, "/pricing"),
        row(site, "s3b", "v3", "pageview", next_day - timedelta(hours=1), "/pricing"),
        row(site, "s3b", "v3", "goal", next_day + timedelta(seconds=1), name="Signup"),
        # v4: a goal a backend posted without a session, an hour after /pricing.
        row(site, "s4", "v4", "pageview", at + timedelta(hours=1), "/pricing"),
        row(site, None, "v4", "goal", at + timedelta(hours=2), name="Signup"),
        # v5: Signup before /pricing -> out of order.
        row(site, "s5", "v5", "goal", at - timedelta(hours=1), name="Signup"),
        row(site, "s5", "v5", "pageview", at, "/pricing"),
        # No visitor id: no visitor.
        row(site, "s6", None, "pageview", at, "/pricing"),
    ])
    steps = [{"page": "/pricing"}, {"goal": "Signup"}]
    visitors = run(site, steps, unit="visitor")
    # Step 1: v1-v5 = 5; step 2 within 24 h: v1, v2, v4 = 3.
    assert figures(visitors) == [(5, 100.0, None, None), (3, 60.0, 60.0, 2)]
    assert visitors["unit"] == "visitor" and visitors["window_hours"] == 24
    # Within 23 h: v1 (Signup at 23 h: inclusive) and v4 = 2.
    assert figures(run(site, steps, unit="visitor", window_hours=23)) == [
        (5, 100.0, None, None), (2, 40.0, 40.0, 3)]
    # Visits: /pricing in s1a, s1b, s2a, s3a, s3b, s4, s5, s6 = 8; then a Signup in the same
    # visit: s1b, s3b = 2 (s2b has no page view, v4's goal no session, s5's is too early).
    assert figures(run(site, steps)) == [(8, 100.0, None, None), (2, 25.0, 25.0, 6)]


def test_visit_filters(site):
    def view(session: str, visitor: str, minute: float, path: str, country: str) -> dict:
        return row(site, session, visitor, "pageview", minutes(minute), path, country=country)

    def signup(session: str, visitor: str, minute: float) -> dict:
        return row(site, session, visitor, "goal", minutes(minute), name="Signup")

    store([
        view("s1", "v1", 0, "/pricing", "DE"), signup("s1", "v1", 1),
        view("s2", "v2", 0, "/pricing", "FR"), signup("s2", "v2", 1),
        # v3: /pricing in a German visit, Signup in a French one.
        view("s4", "v3", 0, "/pricing", "DE"),
        view("s5", "v3", 4, "/x", "FR"), signup("s5", "v3", 5),
        # s6's first page view is French, so the visit is, though /pricing was seen from DE.
        view("s6", "v6", 0, "/", "FR"), view("s6", "v6", 1, "/pricing", "DE"),
        signup("s6", "v6", 2),
    ])
    steps = [{"page": "/pricing"}, {"goal": "Signup"}]
    germany = [["is", "visit:country", ["DE"]]]
    # Visits: /pricing in s1, s2, s4, s6 = 4, then Signup in s1, s2, s6 = 3; from Germany
    # (s1, s4): 2, then 1.
    assert figures(run(site, steps)) == [(4, 100.0, None, None), (3, 75.0, 75.0, 1)]
    assert figures(run(site, steps, filters=germany)) == [
        (2, 100.0, None, None), (1, 50.0, 50.0, 1)]
    # Visitors: v1, v2, v3, v6 all reach both steps; counting only German visits' events: v1
    # both, v3 /pricing only (its Signup is in a French visit), v2 and v6 nothing.
    assert figures(run(site, steps, unit="visitor")) == [(4, 100.0, None, None),
                                                         (4, 100.0, 100.0, 0)]
    assert figures(run(site, steps, unit="visitor", filters=germany)) == [
        (2, 100.0, None, None), (1, 50.0, 50.0, 1)]


def test_weights(site):
    store([
        # Sampled sessions weigh 1/sample rate: s1 and s2 (10) reach /pricing, s1 also /docs/*;
        # s3 (1) both steps, s4 (1) /pricing only, s5 (2.4) /pricing only.
        row(site, "s1", "v1", "pageview", minutes(0), "/pricing", weight=10),
        row(site, "s1", "v1", "pageview", minutes(1), "/docs/a", weight=10),
        row(site, "s2", "v2", "pageview", minutes(0), "/pricing", weight=10),
        row(site, "s3", "v3", "pageview", minutes(0), "/pricing"),
        row(site, "s3", "v3", "pageview", minutes(1), "/docs/b"),
        row(site, "s4", "v4", "pageview", minutes(0), "/pricing"),
        row(site, "s5", "v5", "pageview", minutes(0), "/pricing", weight=2.4),
    ])
    result = run(site, [{"page": "/pricing"}, {"page": "/docs/*"}])
    # Step 1: 10 + 10 + 1 + 1 + 2.4 = 24.4 -> 24; step 2: 10 + 1 = 11; 11/24 = 45.8 %.
    assert figures(result) == [(24, 100.0, None, None), (11, 45.8, 45.8, 13)]
    assert result["estimated"] is True


def test_counts_beyond_a_reals_precision(site):
    # 2**24 + 1 as a PostgreSQL `real` (the weight column's type) is 2**24: the sums are doubles.
    store([row(site, "s1", "v1", "pageview", minutes(0), "/pricing", weight=2 ** 24),
           row(site, "s2", "v2", "pageview", minutes(0), "/pricing"),
           row(site, "s2", "v2", "pageview", minutes(1), "/docs/a")])
    result = run(site, [{"page": "/pricing"}, {"page": "/docs/*"}])
    assert [step["count"] for step in result["steps"]] == [2 ** 24 + 1, 1]


def test_nothing_to_count(site):
    result = run(site, [{"page": "/pricing"}, {"goal": "Signup"}, {"event": "Download"}])
    assert figures(result) == [(0, None, None, None), (0, None, None, 0), (0, None, None, 0)]
    assert result["estimated"] is False


def test_pattern_is_the_whole_path_and_literal_otherwise(site):
    store([
        row(site, "s1", "v1", "pageview", minutes(0), "/a.b"),
        row(site, "s2", "v2", "pageview", minutes(0), "/axb"),  # `.` is no wildcard
        row(site, "s3", "v3", "pageview", minutes(0), "/x/a.b"),
        row(site, "s4", "v4", "pageview", minutes(0), "/a.b/"),  # the whole path must match
        row(site, "s5", "v5", "pageview", minutes(0), "/c.b"),
        # A query string and a fragment are no part of the path.
        row(site, "s6", "v6", "pageview", minutes(0), "/d.b?q=1"),
        row(site, "s7", "v7", "pageview", minutes(0), "/x/y#top"),
        row(site, "s8", "v8", "pageview", minutes(0), "/\U0001F600/a"),
    ])
    # `/a.b` is s1 only; `/*.b` is s1, s5, s6 (not s3: `*` stops at `/`); `/**.b` also s3;
    # `/x/**` is s3 and s7; `/x*` is nothing (`*` stops at `/`, and no path is `/x...`);
    # a prefix ending in a character past U+D7FF (an emoji) is s8.
    counts = [run(site, [{"page": page}, {"page": "/**"}])["steps"][0]["count"]
              for page in ("/a.b", "/*.b", "/**.b", "/x/**", "/x*", "/\U0001F600**")]
    assert counts == [1, 3, 4, 2, 0, 1]


@pytest.mark.parametrize(("arguments", "message"), [
    ({"steps": [{"page": "/"}]},
     '`steps` must be a list of 2 to 8 steps such as {"page": "/pricing"} or {"goal": "Signup"}; '
     "got 1 step."),
    ({"steps": [{"page": "/"}] * 9},
     '`steps` must be a list of 2 to 8 steps such as {"page": "/pricing"} or {"goal": "Signup"}; '
     "got 9 steps."),
    ({"steps": "/pricing"},
     '`steps` must be a list of 2 to 8 steps such as {"page": "/pricing"} or {"goal": "Signup"}; '
     "got not a list."),
    ({"steps": [{"page": "/"}, "Signup"]},
     "`steps[1]` must be an object with one of 'page', 'goal' or 'event' (and an optional "
     "'label')."),
    ({"steps": [{"page": "/"}, {"path": "/x"}]},
     "`steps[1]` has the unknown key 'path'; valid keys are 'page', 'goal', 'event' and 'label'. "
     "Did you mean 'page'?"),
    ({"steps": [{"page": "/", "goal": "Signup"}, {"page": "/"}]},
     "`steps[0]` must have exactly one of 'page', 'goal' or 'event'; it has 'page' and 'goal'."),
    ({"steps": [{"label": "Start"}, {"page": "/"}]},
     "`steps[0]` must have exactly one of 'page', 'goal' or 'event'; it has none of them."),
    ({"steps": [{"page": "/"}, {"goal": ""}]},
     "`steps[1].goal` must be a non-empty string of at most 128 printable characters."),
    ({"steps": [{"page": "/"}, {"event": 3}]},
     "`steps[1].event` must be a non-empty string of at most 128 printable characters."),
    ({"steps": [{"page": "/"}, {"event": "a\x00b"}]},
     "`steps[1].event` must be a non-empty string of at most 128 printable characters."),
    ({"steps": [{"page": "/\ud800"}, {"page": "/"}]},
     "`steps[0].page` must be a non-empty string of at most 2048 printable characters."),
    ({"steps": [{"page": "pricing"}, {"page": "/"}]},
     "`steps[0].page` must be a URL path starting with '/' (such as '/pricing' or '/blog/*'); "
     "got 'pricing'."),
    ({"steps": [{"page": "/"}, {"page": "/x", "label": "x" * 101}]},
     "`steps[1].label` must be a non-empty string of at most 100 printable characters."),
    ({"steps": [{"page": "/"}, {"page": "/x"}], "unit": "visits"},
     "Unknown unit 'visits'. Did you mean 'visit'? Valid units: visit, visitor."),
    ({"steps": [{"page": "/"}, {"page": "/x"}], "unit": "visitor", "window_hours": 0},
     "`window_hours` must be a whole number of hours from 1 to 720; got 0."),
    ({"steps": [{"page": "/"}, {"page": "/x"}], "window_hours": True},
     "`window_hours` must be a whole number of hours from 1 to 720; got True."),
])
def test_bad_arguments(arguments, message):
    with pytest.raises(ArgumentError) as error:
        funnel.validate(**arguments)
    assert str(error.value) == message
