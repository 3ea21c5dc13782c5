"""visit:visitor_type (`new` | `returning`) as a dimension and a filter, on a site (UTC) whose
every figure is worked out below, on both databases and through a live server.

  r1  visitor R  2026-11-20 10:00 pv /          R's first visit: new
  r2  visitor R  2026-11-27 10:00 pv /pricing   R back after a week: returning
  n1  visitor N  2026-11-27 09:00 pv /          new
  n2  visitor N  2026-11-27 15:00 pv /docs      returning (the same day)
  s1  visitor S-1127 (storage-free: an id of the day) 2026-11-27 12:00 pv /   new
  x1  no visitor id  2026-11-27 13:00 pv /      new (no earlier visit can be its visitor's)

On 2026-11-27: new visits n1, s1, x1 = 3, visitors N, S-1127 = 2; returning visits r2, n2 = 2,
visitors R, N = 2; visitors 3 (R, N, S-1127). On 2026-11-20: r1, new. After R is erased: on the
27th returning is n2 alone (1 visit, visitor N), new unchanged.
"""
from datetime import datetime
from typing import Any

import pytest

from app.retention import erase
from tests.fixtures.helpers import db, site_with_events, tool_result
from tests.fixtures.mcp import sdk_calls
from tests.fixtures.query import ev

DAY = {"from": "2026-11-27", "to": "2026-11-27"}


def dataset(site_id: int, other_id: int) -> list[dict[str, Any]]:
    d = datetime
    return [
        ev(site_id, "r1", "R", "pageview", d(2026, 11, 20, 10), "/"),
        ev(site_id, "r2", "R", "pageview", d(2026, 11, 27, 10), "/pricing"),
        ev(site_id, "n1", "N", "pageview", d(2026, 11, 27, 9), "/"),
        ev(site_id, "n2", "N", "pageview", d(2026, 11, 27, 15), "/docs"),
        ev(site_id, "s1", "S-1127", "pageview", d(2026, 11, 27, 12), "/"),
        ev(site_id, "x1", None, "pageview", d(2026, 11, 27, 13), "/"),
        ev(other_id, "r0", "R", "pageview", d(2026, 11, 1, 10), "/"),  # another site's
    ]


@pytest.fixture
def site(app, make_site):
    keys = site_with_events(app, make_site, "vt.example", dataset, timezone="UTC")
    client = app.test_client()
    keys.ask = lambda arguments: tool_result(client, keys.server_headers(), "query", arguments)
    return keys


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result["isError"] is False, result
    return result["structuredContent"]


def rows(found: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(*row["dimensions"], *row["metrics"]) for row in found["results"]]


def test_new_and_returning(site):
    found = ok(site.ask({**DAY, "metrics": ["visits", "visitors"],
                         "dimensions": ["visit:visitor_type"]}))
    assert rows(found) == [("new", 3, 2), ("returning", 2, 2)]
    assert found["totals"] == [5, 3]
    assert rows(ok(site.ask({"from": "2026-11-20", "to": "2026-11-20", "metrics": ["visits"],
                             "dimensions": ["visit:visitor_type"]}))) == [("new", 1)]
    # the week holding both of R's visits: r1 is still its first
    assert rows(ok(site.ask({"from": "2026-11-20", "to": "2026-11-27", "metrics": ["visits"],
                             "dimensions": ["visit:visitor_type"]}))) == [("new", 4),
                                                                         ("returning", 2)]


def test_as_a_filter_beside_other_dimensions(site):
    returning = [["is", "visit:visitor_type", ["returning"]]]
    assert rows(ok(site.ask({**DAY, "metrics": ["visits"], "dimensions": ["event:page"],
                             "filters": returning}))) == [("/docs", 1), ("/pricing", 1)]
    assert ok(site.ask({**DAY, "metrics": ["visitors"], "filters": [
        ["is", "visit:visitor_type", ["new"]]]}))["totals"] == [2]
    assert rows(ok(site.ask({**DAY, "metrics": ["visits"],
                             "dimensions": ["visit:visitor_type", "time:hour"]}))) == [
        ("new", "2026-11-27T09:00", 1), ("returning", "2026-11-27T10:00", 1),
        ("new", "2026-11-27T12:00", 1), ("new", "2026-11-27T13:00", 1),
        ("returning", "2026-11-27T15:00", 1)]  # time first, ascending


def test_erasure_leaves_the_others_as_they_were(app, site):
    with app.app_context(), db(app):
        erase.erase_anonymous(site.site.id, "R")
    assert rows(ok(site.ask({**DAY, "metrics": ["visits", "visitors"],
                             "dimensions": ["visit:visitor_type"]}))) == [("new", 3, 2),
                                                                         ("returning", 1, 1)]


def test_refusal_after_its_valid_variant(site):
    ok(site.ask({**DAY, "metrics": ["visits"], "filters": [
        ["is", "visit:visitor_type", ["new"]]]}))
    bad = site.ask({**DAY, "metrics": ["visits"], "dimensions": ["visit:visitor_typ"]})
    assert bad["isError"] is True
    assert "Did you mean 'visit:visitor_type'" in bad["content"][0]["text"]


@pytest.mark.slow
def test_through_the_sdk_client(site, start_server):
    live = start_server(workers=1)
    answers = sdk_calls(f"{live.url}/api/mcp", site.server_key, {
        "split": ("query", {**DAY, "metrics": ["visits"],
                            "dimensions": ["visit:visitor_type"]}),
    })
    assert answers["split"].is_error is False, answers["split"].content
    assert rows(answers["split"].structured_content) == [("new", 3), ("returning", 2)]


def test_visits_across_the_period_s_edges(app, make_site):
    """On tests/analytics/test_query.py's site (28-29 March, Berlin): A's first visit is s8 (the
    26th), so S1 and S2 return; B's first is S3 (w2), C's S4 (begun before the period: derived
    from its events in it), D's S5. New visits 2 + 1 + 1 = 4, visitors B (2), C, D = 4;
    returning visits 2, visitor A 1."""
    from tests.fixtures.query import PERIOD
    from tests.fixtures.query import dataset as query_dataset
    keys = site_with_events(app, make_site, "q.example", query_dataset)
    found = ok(tool_result(app.test_client(), keys.server_headers(), "query", {
        **PERIOD, "metrics": ["visits", "visitors"], "dimensions": ["visit:visitor_type"]}))
    assert rows(found) == [("new", 4, 4), ("returning", 2, 1)]


def test_a_pruned_first_visit_makes_the_next_one_new(app, make_site):
    """P's first visit (2026-10-20) goes with October's data: the one egis then holds first is
    its visit of 2026-11-27, new; Q's two November visits stay new, then returning."""
    from app.retention.prune import PruneCutoffs, prune

    def pruned_dataset(site_id: int, _other_id: int) -> list[dict[str, Any]]:
        d = datetime
        return [ev(site_id, "p1", "P", "pageview", d(2026, 10, 20, 10), "/"),
                ev(site_id, "p2", "P", "pageview", d(2026, 11, 27, 10), "/pricing"),
                ev(site_id, "q1", "Q", "pageview", d(2026, 11, 26, 9), "/"),
                ev(site_id, "q2", "Q", "pageview", d(2026, 11, 27, 9), "/docs")]

    keys = site_with_events(app, make_site, "pruned.example", pruned_dataset, timezone="UTC")
    client = app.test_client()

    def split() -> list[tuple[Any, ...]]:
        return rows(ok(tool_result(client, keys.server_headers(), "query", {
            **DAY, "metrics": ["visits", "visitors"], "dimensions": ["visit:visitor_type"]})))

    assert split() == [("returning", 2, 2)]  # p2 after p1, q2 after q1
    with app.app_context(), db(app):
        prune(PruneCutoffs(data_before=datetime(2026, 11, 1),
                           batch_ids_before=datetime(2026, 11, 1),
                           salt_days_before=datetime(2026, 11, 1).date()))
    assert split() == [("new", 1, 1), ("returning", 1, 1)]
