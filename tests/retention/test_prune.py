"""Retention (`flask data prune`, app.retention.prune) on both databases, also while ingest is
running."""
import threading
from datetime import datetime, timedelta

import pytest

from app.retention import prune
from app.rollups import merging
from app.storage.partitions import month_start
from models import Batch, Event, IngestTally, Usage, Visit
from models.site import utcnow
from tests.fixtures.retention import (
    OAUTH_TABLES,
    TABLES,
    add_batch,
    add_crawl_hit,
    add_event,
    add_server_event,
    counts,
    run,
    table_lines,
    visits_left,
)
from tests.fixtures.rollups import assert_as_rebuilt, page_table
from tests.fixtures.tracking import batch, db, dumps, post_json, post_live, stored_counts


def test_prune_deletes_what_is_older_and_keeps_the_rest(app, std_site, free_site):
    now = utcnow()
    cutoff = month_start(now, -3)
    old, kept = cutoff - timedelta(seconds=1), cutoff
    with db(app):
        for site in (std_site.site, free_site.site):
            for moment in (datetime(1970, 1, 1), old, kept, now):
                add_event(site.id, moment)
            add_server_event(site.id, old, order_id=f"o-{site.id}-old")
            add_server_event(site.id, kept, order_id=f"o-{site.id}-kept")
            add_crawl_hit(site.id, old)
            add_crawl_hit(site.id, now)
            IngestTally.create(site_id=site.id, day=old.date(), reason="sampled", count=5)
            IngestTally.create(site_id=site.id, day=kept.date(), reason="sampled", count=5)
            Usage.create(site_id=site.id, period=old.strftime("%Y-%m"), shard=0, events=9)
            Usage.create(site_id=site.id, period=kept.strftime("%Y-%m"), shard=0, events=9)
            add_batch(site.id, now - timedelta(days=30, minutes=1))
            add_batch(site.id, now - timedelta(days=29))
    lines = run(app, "data", "prune", "--older-than", "3")
    assert lines[0].startswith(f"Deleted data from before {cutoff:%Y-%m-%d} and batch ids "
                               f"received before ")
    assert lines[0].endswith(" UTC (30 days).")
    # the events' quarter hours: prune merges the events stored beside the store path first
    assert table_lines(lines) == {"event": 4, "visit": 0, "visit_page": 0, "event_slot": 4,
                                  "server_event": 2, "crawl_hit": 2,
                                  "ingest_tally": 2, "usage": 2, "batch": 2, "visitor_salt": 0,
                                  "visitor_state": 0, "idempotency_key": 0,
                                  **dict.fromkeys(OAUTH_TABLES, 0)}
    assert counts(app) == {"event": 4, "server_event": 2, "crawl_hit": 2, "ingest_tally": 2,
                           "usage": 2, "batch": 2}
    with db(app):
        assert min(e.occurred_at for e in Event.select()) == kept
    lines = run(app, "data", "prune", "--older-than", "3")
    assert [line.split("\t")[0] for line in lines[1:]] == list(TABLES)  # every table, in order
    assert table_lines(lines) == dict.fromkeys(TABLES, 0)


def test_prune_keeps_the_part_of_a_visit_after_the_cutoff(app, std_site, free_site):
    """A visit that ended before the cutoff goes with its pages and quarter hours; one that
    crosses the cutoff stays for the days kept, derived again from its events left: its entry
    is its first page view after the cutoff, its counts those of its events after it."""
    cutoff = month_start(utcnow(), -3)
    with db(app):
        for site in (std_site.site, free_site.site):
            add_event(site.id, cutoff - timedelta(days=40), session_id="old")
            add_event(site.id, cutoff - timedelta(seconds=1), session_id="across",
                      page_url="https://std.example/before", path="/before")
            add_event(site.id, cutoff + timedelta(minutes=5), session_id="across",
                      page_url="https://std.example/after", path="/after")
            add_event(site.id, cutoff + timedelta(minutes=6), session_id="across", type="click",
                      page_url="https://std.example/after", path="/after")
            add_event(site.id, cutoff, session_id="kept")
            add_event(site.id, utcnow(), session_id="now")
        merging.rebuild()
        assert Visit.select().count() == 8
    lines = run(app, "data", "prune", "--older-than", "3")
    # per site: the session "old" and its page, the page of "across" before the cutoff ("across"
    # keeps its row and its page after it); the quarter hours of cutoff - 40 days and - 1 s
    assert {name: table_lines(lines)[name] for name in ("visit", "visit_page", "event_slot")
            } == {"visit": 2, "visit_page": 4, "event_slot": 4}
    assert [(site_id, session) for site_id, session, _ in visits_left(app)] == [
        (site.id, session) for site in (std_site.site, free_site.site)
        for session in ("across", "kept", "now")]
    rows = {row["session_id"]: row for row in assert_as_rebuilt(app)}
    across = rows["across"]
    assert (across["started_at"], across["ended_at"], across["events"], across["pageviews"],
            across["interactions"], across["entry_page"], across["exit_page"]) == (
        cutoff + timedelta(minutes=5), cutoff + timedelta(minutes=6), 2, 1, 1, "/after",
        "/after")
    assert {(row["session_id"], row["page"]) for row in page_table(app)} == {
        ("across", "/after"), ("kept", "/"), ("now", "/")}
    with db(app):
        assert prune.prune(prune.PruneCutoffs.at(utcnow(), 3, 30))["visit"] == 0


def test_a_batch_id_is_forgotten_after_the_idempotency_window(make_app, std_site):
    app = make_app(IDEMPOTENCY_DAYS=7)
    client = app.test_client()
    remembered, forgotten = batch(), batch()
    for body in (remembered, forgotten):
        assert post_json(client, "/api/events", body, std_site.write_headers()).status_code == 200
    with db(app):
        Batch.update(received_at=utcnow() - timedelta(days=8)).where(
            Batch.batch_key == forgotten["id"]).execute()
    lines = run(app, "data", "prune", "--older-than", "12")
    assert lines[0].endswith(" UTC (7 days).")
    assert table_lines(lines)["batch"] == 1
    again = [post_json(client, "/api/events", body, std_site.write_headers()).get_json()
             for body in (remembered, forgotten)]
    assert again == [{"success": True, "count": 1, "duplicate": True},
                     {"success": True, "count": 1}]  # past the window: stored as new


def test_prune_goes_in_small_transactions(app, std_site):
    old = month_start(utcnow(), -2) - timedelta(days=1)
    with db(app):
        for minute in range(25):
            add_event(std_site.site.id, old + timedelta(minutes=minute))
        add_event(std_site.site.id, utcnow())
        cutoffs = prune.PruneCutoffs.at(utcnow(), 1, 30)
        assert prune.prune(cutoffs, batch_rows=4)["event"] == 25
        assert Event.select().count() == 1


@pytest.mark.parametrize("months", ["0", "-1", "x"])
def test_prune_needs_a_whole_number_of_months(app, months):
    result = app.test_cli_runner().invoke(args=["data", "prune", "--older-than", months])
    assert result.exit_code == 2 and "--older-than" in result.output


@pytest.mark.slow
def test_prune_runs_safely_beside_live_ingest(start_server, app, std_site):
    """Ingest through a real server keeps answering 200 and storing every event while a
    prune deletes a few thousand old rows, many small transactions of them."""
    old = month_start(utcnow(), -2) - timedelta(days=1)
    with db(app):
        Event.insert_many([{"site_id": std_site.site.id, "type": "pageview",
                            "occurred_at": old, "received_at": old}
                           for _ in range(3000)]).execute()
    server = start_server(workers=2)
    statuses: list[int] = []
    stop = threading.Event()

    def ingest() -> None:
        while not stop.is_set() or len(statuses) < 20:
            status, _, _ = post_live(server.url, dumps(batch(5)), std_site.write_headers())
            statuses.append(status)

    sender = threading.Thread(target=ingest)
    sender.start()
    try:
        with db(app):
            cutoffs = prune.PruneCutoffs.at(utcnow(), 1, 30)
            deleted = prune.prune(cutoffs, batch_rows=100)
    finally:
        stop.set()
        sender.join(timeout=60)
    assert deleted["event"] == 3000
    assert statuses and set(statuses) == {200}, server.log()
    assert stored_counts(app)["events"] == 5 * len(statuses)


# --- erase -----------------------------------------------------------------------------------
