"""The `paths` tool over tests/analytics/journeys.py's nine weeks, its steps, links and top
paths worked out by hand from the visits listed there, through /api/mcp."""
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import pytest

from models import database
from tests.fixtures.funnel import row, store
from tests.fixtures.helpers import tool_result
from tests.fixtures.journeys import WEIGHTED, place, today, week_start


@pytest.fixture
def ask(app, std_site):
    with app.app_context(), database.connection_context():
        place(std_site.site)
    client = app.test_client()
    nine_weeks = {"from": week_start(8), "to": today().isoformat()}

    def call(**arguments: Any) -> dict[str, Any]:
        return tool_result(client, std_site.server_headers(), "paths",
                           {**nine_weeks, **arguments})

    return call


def answer(ask, **arguments: Any) -> dict[str, Any]:
    result = ask(**arguments)
    assert result["isError"] is False, result
    return result["structuredContent"]


def steps(result: dict[str, Any]) -> list[list[tuple[str, int]]]:
    return [[(value["value"], value["visits"]) for value in step["values"]]
            for step in result["steps"]]


def links(result: dict[str, Any]) -> list[tuple[int, str, str, int]]:
    return [(link["step"], link["from"], link["to"], link["visits"]) for link in result["links"]]


def top(result: dict[str, Any]) -> list[tuple[list[str], int]]:
    return [(path["path"], path["visits"]) for path in result["top_paths"]]


def test_forward_from_a_page_follows_its_first_view(ask):
    result = answer(ask, start={"page": "/pricing"})
    # A -4: /signup, goal:Signup; D -5 (from its first /pricing): /docs, /pricing, goal:Signup;
    # D -3: /signup; E -1: goal:Signup
    assert (result["direction"], result["anchor"], result["visits"]) == (
        "forward", "/pricing", 4)
    assert result["timezone"] == "Europe/Berlin"
    assert steps(result) == [[("/signup", 2), ("/docs", 1), ("goal:Signup", 1)],
                             [("/pricing", 1), ("goal:Signup", 1), ("(exit)", 2)],
                             [("goal:Signup", 1), ("(exit)", 1)]]
    assert [value["share"] for value in result["steps"][0]["values"]] == [50.0, 25.0, 25.0]
    assert links(result) == [
        (1, "/pricing", "/signup", 2), (1, "/pricing", "/docs", 1),
        (1, "/pricing", "goal:Signup", 1),
        (2, "/docs", "/pricing", 1), (2, "/signup", "(exit)", 1),
        (2, "/signup", "goal:Signup", 1), (2, "goal:Signup", "(exit)", 1),
        (3, "/pricing", "goal:Signup", 1), (3, "goal:Signup", "(exit)", 1)]
    assert top(result) == [(["/docs", "/pricing", "goal:Signup"], 1), (["/signup", "(exit)"], 1),
                           (["/signup", "goal:Signup", "(exit)"], 1),
                           (["goal:Signup", "(exit)"], 1)]
    assert result["estimated"] is False
    assert "Paths forward from /pricing (4 visits)" in ask(start={"page": "/pricing"}
                                                           )["content"][0]["text"]


def test_a_limit_folds_the_rest_into_other_which_goes_on(ask):
    result = answer(ask, start={"page": "/pricing"}, limit=1)
    # step 1 keeps /signup; step 2 /pricing (tied with goal:Signup, first by value); step 3
    # goal:Signup
    assert steps(result) == [[("/signup", 2), ("(other)", 2)],
                             [("/pricing", 1), ("(other)", 1), ("(exit)", 2)],
                             [("goal:Signup", 1), ("(exit)", 1)]]
    assert top(result) == [(["(other)", "(exit)"], 1)]


def test_backward_from_a_goal_follows_its_last_occurrence(ask):
    result = answer(ask, end={"goal": "Signup"})
    # A -4: /signup, /pricing, /; D -5: /pricing, /docs, /pricing; E -1: /pricing, /blog
    assert (result["direction"], result["anchor"], result["visits"]) == (
        "backward", "goal:Signup", 3)
    assert steps(result) == [[("/pricing", 2), ("/signup", 1)],
                             [("/blog", 1), ("/docs", 1), ("/pricing", 1)],
                             [("/", 1), ("/pricing", 1), ("(entry)", 1)]]
    assert links(result)[:2] == [(1, "goal:Signup", "/pricing", 2),
                                 (1, "goal:Signup", "/signup", 1)]


def test_from_the_entry_a_reload_is_one_step(ask):
    result = answer(ask, steps=2)
    # 16 visits; "/" opens A's eight, C's first and D's first (its reload folded)
    assert (result["anchor"], result["visits"]) == ("(entry)", 16)
    assert steps(result) == [[("/", 10), ("/blog", 3), ("/docs", 2), ("/pricing", 1)],
                             [("/pricing", 3), ("/", 1), ("/docs/install", 1), ("/signup", 1),
                              ("(exit)", 10)]]
    assert result["steps"][0]["values"][0]["share"] == 62.5


def test_filters_select_the_visits(ask):
    result = answer(ask, start={"page": "/pricing"}, filters=[["is", "visit:country", ["DE"]]])
    assert result["visits"] == 1
    assert top(result) == [(["/docs", "/pricing", "goal:Signup"], 1)]


def test_has_done_and_has_not_done_select_the_visits(ask):
    assert answer(ask, start={"page": "/pricing"})["visits"] == 4
    signed_up = ["is", "event:goal", ["Signup"]]
    # the visits through /pricing with a Signup: A's (-4), D's (-5) and E's (-1)
    done = answer(ask, start={"page": "/pricing"}, filters=[["has_done", signed_up]])
    assert done["visits"] == 3
    assert top(done) == [(["/docs", "/pricing", "goal:Signup"], 1),
                         (["/signup", "goal:Signup", "(exit)"], 1), (["goal:Signup", "(exit)"], 1)]
    # and without: D's second visit (-3), /pricing then /signup
    not_done = answer(ask, start={"page": "/pricing"}, filters=[["has_not_done", signed_up]])
    assert (not_done["visits"], top(not_done)) == (1, [(["/signup", "(exit)"], 1)])
    refused = ask(start={"page": "/pricing"},
                  filters=[["has_done", ["is", "visit:country", ["DE"]]]])
    assert refused["isError"] is True and "event:" in refused["content"][0]["text"]


@pytest.mark.parametrize(("arguments", "says"), [
    ({"start": {"page": "/"}, "end": {"goal": "Signup"}}, "Give at most one of `start`"),
    ({"steps": 11}, "`steps` must be a whole number from 1 to 10"),
    ({"limit": 0}, "`limit` must be a whole number from 1 to 20"),
    ({"start": {"event": "Download"}}, "`start` must be a page"),
    ({"end": "/pricing"}, "`end` must be a page"),
    ({"start": {"page": "pricing"}}, "`start.page` must be a URL path"),
    ({"start": {"goal": "Signup", "page": "/"}}, "`start` must have exactly one of"),
])
def test_every_bad_argument_is_a_tool_error_that_teaches(ask, arguments, says):
    assert ask(steps=10, limit=20)["isError"] is False  # the valid variant
    result = ask(**arguments)
    assert result["isError"] is True
    assert says in result["content"][0]["text"], result["content"][0]["text"]


def test_a_sampled_visit_weighs_its_weight(app, std_site, ask):
    with app.app_context(), database.connection_context():
        place(std_site.site, WEIGHTED, weight=2.0)
    result = answer(ask, start={"page": "/pricing"}, steps=1)
    # the four visits through /pricing, and F's (weight 2): /docs, then it ended
    assert (result["visits"], result["estimated"]) == (6, True)
    assert steps(result) == [[("/docs", 3), ("/signup", 2), ("goal:Signup", 1)]]


def test_from_the_entry_a_visit_across_the_periods_edge_has_its_nodes_in_it(app, std_site):
    """A visit from 23:50 to 00:20 (the site's zone, UTC here) across midnight: each day's
    paths from the entry hold its nodes of that day (the edge read from its events), beside a
    visit inside the day (read from its visit row's head)."""
    site = std_site.site
    midnight = datetime.combine(datetime.now(UTC).date() - timedelta(days=3), time())
    rows = [row(site, "x", "v-x", "pageview", midnight + timedelta(minutes=minute), path=path)
            for minute, path in ((-10, "/late"), (10, "/night"), (20, "/morning"))]
    rows += [row(site, "y", "v-y", "pageview", midnight + timedelta(minutes=minute), path=path)
             for minute, path in ((30, "/a"), (31, "/a"), (32, "/b"))]
    with app.app_context(), database.connection_context():
        site.timezone = "UTC"
        site.save()
        store(rows)
    client = app.test_client()

    def top_paths(first: date, last: date) -> list[tuple[list[str], int]]:
        result = tool_result(client, std_site.server_headers(), "paths",
                             {"from": first.isoformat(), "to": last.isoformat()})
        assert result["isError"] is False, result
        return top(result["structuredContent"])

    day = midnight.date()
    assert top_paths(day, day) == [(["/a", "/b", "(exit)"], 1),
                                   (["/night", "/morning", "(exit)"], 1)]
    before = day - timedelta(days=1)
    assert top_paths(before, before) == [(["/late", "(exit)"], 1)]
    assert top_paths(before, day) == [(["/a", "/b", "(exit)"], 1),
                                      (["/late", "/night", "/morning"], 1)]
