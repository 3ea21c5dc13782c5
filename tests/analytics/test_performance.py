"""get_web_vitals on the edges, figures worked out by hand, on both databases.

PostgreSQL reads a performance event from one of two partial indexes, by the size of its
properties (as text, 400 bytes) and of its URL (800 bytes), migration 0012; SQLite reads the
table and computes p75 in Python (app/analytics/percentile.py). The events here sit on both
sides of both bounds, of the period's local midnights, and carry ties, a sampled weight, values
that are not numbers, no page URL, and pages below the top ones.
"""
import json
import logging
from datetime import datetime
from typing import Any

import pytest

from app.analytics.percentile import p75
from models import database
from tests.fixtures.analytics import _event
from tests.fixtures.database import BACKEND
from tests.fixtures.helpers import call_tool, db, site_with_events

PERIOD = {"from": "2026-03-10", "to": "2026-03-11"}  # Europe/Berlin: 9 March 23:00 UTC on
FIRST_MIDNIGHT, END_MIDNIGHT = datetime(2026, 3, 9, 23), datetime(2026, 3, 11, 23)
DAY = datetime(2026, 3, 10, 12)
PAGE_A, PAGE_B, PAGE_C = ("https://std.example/a", "https://std.example/b",
                          "https://std.example/c")
INDEXED_PROPERTIES_BYTES, INDEXED_URL_BYTES = 400, 800


def padded(properties: dict[str, Any], size: int) -> dict[str, Any]:
    """`properties` with a `pad` string making their JSON text (PostgreSQL's jsonb output:
    ", " and ": " between items) exactly `size` bytes."""
    bare = len(json.dumps({**properties, "pad": ""}))
    result = {**properties, "pad": "x" * (size - bare)}
    assert len(json.dumps(result)) == size
    return result


def url_of(size: int) -> str:
    """A URL of page /b exactly `size` bytes long (its query string makes the length)."""
    base = PAGE_B + "?q="
    return base + "y" * (size - len(base))


def _events(site_id: int, other_site_id: int) -> list[dict[str, Any]]:
    def vital(properties: Any, url: str | None = PAGE_A, at: datetime = DAY,
              weight: float = 1.0, site: int = site_id) -> dict[str, Any]:
        return _event(site, "s1", "v1", "performance", at, weight=weight, url=url,
                      properties=properties)

    return [
        # /a: lcp 1000, 2000, 2000 (a tie, weight 10), 4000 -> p75 2500; cls 0.25, 0.25
        vital({"lcp": 1000, "cls": 0.25}),
        vital({"lcp": 2000, "cls": 0.25}),
        vital(padded({"lcp": 2000}, INDEXED_PROPERTIES_BYTES), weight=10.0),
        vital(padded({"lcp": 4000}, INDEXED_PROPERTIES_BYTES + 1)),
        vital({"lcp": "slow", "cls": True, "inp": None}),  # no number: no sample
        vital(None),
        # /b: lcp 500, 3000, 5000 -> p75 4000; cls 0.75; inp 100
        vital({"lcp": 3000, "cls": 0.75}, url=url_of(INDEXED_URL_BYTES)),
        vital({"lcp": 5000, "inp": 100}, url=url_of(INDEXED_URL_BYTES + 1)),
        vital({"lcp": 500}, url=PAGE_B),
        # below the top two pages: /c (its event at the period's first local midnight) and the
        # event without a URL (page "/")
        vital({"lcp": 600}, url=PAGE_C, at=FIRST_MIDNIGHT),
        vital({"lcp": 100}, url=PAGE_C),
        vital({"lcp": 700}, url=None),
        # outside: just before the first local midnight, at the end one, another site's
        vital({"lcp": 99_000}, at=datetime(2026, 3, 9, 22, 59, 59)),
        vital({"lcp": 99_000}, at=END_MIDNIGHT),
        vital({"lcp": 99_000}, site=other_site_id),
    ]


@pytest.fixture
def vitals_site(app, make_site):
    return site_with_events(app, make_site, "std.example", _events)


def test_site_and_top_pages_on_every_edge(client, vitals_site):
    result = call_tool(client, vitals_site.server_key, "get_web_vitals", limit=2, **PERIOD)
    # lcp, all pages: 100 500 600 700 1000 2000 2000 3000 4000 5000; position 0.75 x 9 = 6.75:
    # 2000 + 0.75 x (3000 - 2000). Samples weighted: 9 events of weight 1, one of 10.
    # cls: 0.25 0.25 0.75; position 1.5: 0.25 + 0.5 x 0.5.
    assert result["site_vitals"] == {
        "lcp": {"p75": 2750.0, "samples": 19, "rating": "needs improvement"},
        "inp": {"p75": 100.0, "samples": 1, "rating": "good"},
        "cls": {"p75": 0.5, "samples": 3, "rating": "poor"},
        "fcp": None, "ttfb": None,
    }
    # /a: 13 lcp samples (one weighs 10) and 2 cls; /b: 3 lcp, 1 cls, 1 inp. /c and "/" below.
    assert result["pages"] == [
        {"page": "/a", "samples": 15, "lcp": 2500.0, "inp": None, "cls": 0.25, "fcp": None,
         "ttfb": None},
        {"page": "/b", "samples": 5, "lcp": 4000.0, "inp": 100.0, "cls": 0.75, "fcp": None,
         "ttfb": None},
    ]
    assert result["estimated"] is True


def test_a_period_without_performance_events(client, vitals_site):
    result = call_tool(client, vitals_site.server_key, "get_web_vitals",
                       **{"from": "2026-04-01", "to": "2026-04-02"})
    assert result["site_vitals"] == dict.fromkeys(("lcp", "inp", "cls", "fcp", "ttfb"))
    assert result["pages"] == [] and result["estimated"] is False


@pytest.mark.parametrize(("values", "expected"), [
    ([], None),
    ([7], 7),
    ([3, 1, 2], 2.5),  # position 1.5: 2 + 0.5 x (3 - 2)
    ([4, 1, 3, 2, 5], 4),  # position 3, exactly a value: PostgreSQL returns it unchanged
    ([1000, 2000, 3000, 5000], 3500.0),
    ([2.5, 2.5, 2.5, 1], 2.5),
])
def test_p75_is_percentile_cont(values, expected):
    assert p75(values) == expected


@pytest.mark.skipif(BACKEND != "postgres", reason="the indexes are PostgreSQL's")
def test_postgresql_reads_the_metrics_from_the_vitals_index(app, client, vitals_site, caplog):
    """The conditions and the metric expressions of the query are the indexes' own: the planner
    reads the short events with an index-only scan of event_vitals, taking each metric's value
    from the index (EXPLAIN shows such a value as the index's expression in parentheses), and
    the long ones through event_long_vitals."""
    with db(app):
        database.execute_sql("VACUUM ANALYZE event")  # index-only scans need the visibility map
    with caplog.at_level(logging.DEBUG, logger="peewee"):
        call_tool(client, vitals_site.server_key, "get_web_vitals", **PERIOD)
    sql, params = next(record.msg for record in caplog.records if isinstance(record.msg, tuple)
                       and record.msg[0].startswith('WITH "vital_events"'))
    with db(app), database.atomic():
        partition_indexes = {parent: {row[0] for row in database.execute_sql(
            "SELECT inhrelid::regclass::text FROM pg_inherits WHERE inhparent = %s::regclass",
            (parent,))} for parent in ("event_vitals", "event_long_vitals")}
        # On a few rows a sequential scan is cheapest: the plan for many is what is asked here.
        database.execute_sql("SET LOCAL enable_seqscan = off")
        database.execute_sql("SET LOCAL enable_bitmapscan = off")
        (plan,), = database.execute_sql("EXPLAIN (VERBOSE, FORMAT JSON) " + sql, params)
    nodes = _nodes(plan[0]["Plan"])
    assert any(node.get("Index Name") in partition_indexes["event_long_vitals"] for node in nodes)
    scans = [node for node in nodes if node.get("Index Name") in partition_indexes["event_vitals"]]
    assert scans and all(node["Node Type"] == "Index Only Scan" for node in scans)
    for node in scans:
        from_index = [column for column in node["Output"] if column.startswith("(CASE WHEN")]
        assert len(from_index) == 5, node["Output"]


def _nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [node, *[found for child in node.get("Plans", []) for found in _nodes(child)]]
