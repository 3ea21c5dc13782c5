"""Retention and erasure (`flask data prune`, `flask data erase`), on both databases, also while
ingest is running."""
import threading
import uuid
from datetime import datetime, timedelta

import pytest

from app import retention, rollups, visits
from app.partitions import month_start
from models import Batch, CrawlHit, Event, IngestTally, ServerEvent, Usage, Visit
from models.site import utcnow
from tests.tracking.helpers import (
    batch,
    db,
    dumps,
    event,
    goal,
    post_json,
    post_live,
    stored_counts,
)
from tests.tracking.test_visits import page_table, slot_table

TABLES = ("event", "visit", "visit_page", "event_slot", "server_event", "crawl_hit",
          "ingest_tally", "usage", "batch", "visitor_salt", "visitor_state", "idempotency_key")


def add_event(site_id: int, occurred_at: datetime, **fields) -> None:
    Event.create(site_id=site_id, type="pageview", page_url="https://std.example/",
                 occurred_at=occurred_at, received_at=fields.pop("received_at", occurred_at),
                 **fields)


def add_server_event(site_id: int, occurred_at: datetime, **fields) -> None:
    ServerEvent.create(uid=uuid.uuid4(), site_id=site_id, event_name="purchase",
                       occurred_at=occurred_at, received_at=occurred_at, **fields)


def add_crawl_hit(site_id: int, received_at: datetime) -> None:
    CrawlHit.create(site_id=site_id, path="/", user_agent="GPTBot", category="ai",
                    received_at=received_at)


def add_batch(site_id: int, received_at: datetime) -> str:
    key = f"batch-{uuid.uuid4().hex}"
    Batch.create(site_id=site_id, batch_key=key, event_count=1, received_at=received_at)
    return key


def counts(app) -> dict[str, int]:
    with db(app):
        models = (Event, ServerEvent, CrawlHit, IngestTally, Usage, Batch)
        return {model._meta.table_name: model.select().count() for model in models}


def run(app, *args: str):
    result = app.test_cli_runner().invoke(args=list(args))
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout.splitlines()


def table_lines(lines: list[str]) -> dict[str, int]:
    return {name: int(count) for name, count in (line.split("\t") for line in lines[1:])}


# --- prune -----------------------------------------------------------------------------------

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
                                  "visitor_state": 0, "idempotency_key": 0}
    assert counts(app) == {"event": 4, "server_event": 2, "crawl_hit": 2, "ingest_tally": 2,
                           "usage": 2, "batch": 2}
    with db(app):
        assert min(e.occurred_at for e in Event.select()) == kept
    assert table_lines(run(app, "data", "prune", "--older-than", "3")) == dict.fromkeys(TABLES, 0)


def test_prune_deletes_the_visits_that_began_before_the_cutoff(app, std_site, free_site):
    """A visit goes with the month it began in, even one that went on past the cutoff; so do
    its page rows; a quarter hour's counts go with it."""
    cutoff = month_start(utcnow(), -3)
    with db(app):
        for site in (std_site.site, free_site.site):
            add_event(site.id, cutoff - timedelta(days=40), session_id="old")
            add_event(site.id, cutoff - timedelta(seconds=1), session_id="across")
            add_event(site.id, cutoff + timedelta(minutes=5), session_id="across")
            add_event(site.id, cutoff, session_id="kept")
            add_event(site.id, utcnow(), session_id="now")
        rollups.rebuild()
        assert Visit.select().count() == 8
    lines = run(app, "data", "prune", "--older-than", "3")
    # per site: the sessions "old" and "across", one page each; the quarter hours of
    # cutoff - 40 days and cutoff - 1 s
    assert {name: table_lines(lines)[name] for name in ("visit", "visit_page", "event_slot")
            } == {"visit": 4, "visit_page": 4, "event_slot": 4}
    assert [(site_id, session) for site_id, session, _ in visits_left(app)] == [
        (site.id, session) for site in (std_site.site, free_site.site)
        for session in ("kept", "now")]
    with db(app):
        assert retention.prune(retention.PruneCutoffs.at(utcnow(), 3, 30))["visit"] == 0


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
        cutoffs = retention.PruneCutoffs.at(utcnow(), 1, 30)
        assert retention.prune(cutoffs, batch_rows=4)["event"] == 25
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
            cutoffs = retention.PruneCutoffs.at(utcnow(), 1, 30)
            deleted = retention.prune(cutoffs, batch_rows=100)
    finally:
        stop.set()
        sender.join(timeout=60)
    assert deleted["event"] == 3000
    assert statuses and set(statuses) == {200}, server.log()
    assert stored_counts(app)["events"] == 5 * len(statuses)


# --- erase -----------------------------------------------------------------------------------

@pytest.fixture
def people(app, std_site, free_site):
    """On std.example: user-1 seen on browsers a-1 and a-2 (a-1 also before identify()), a
    stranger on a-9; user-1 also exists on free.example (another site: never touched)."""
    now = utcnow()
    site, other = std_site.site.id, free_site.site.id
    with db(app):
        add_event(site, now, anonymous_id="a-1", session_id="s-1")  # before identify()
        add_event(site, now, anonymous_id="a-1", user_id="user-1", session_id="s-1")
        add_event(site, now, anonymous_id="a-2", user_id="user-1", session_id="s-2")
        add_event(site, now, anonymous_id="a-2", session_id="s-3")
        add_event(site, now, anonymous_id="a-9", user_id="user-9", session_id="s-9")
        add_event(other, now, anonymous_id="a-1", user_id="user-1", session_id="s-1")
        add_server_event(site, now, identified_user_id="user-1", order_id="o1")
        add_server_event(site, now, anonymous_id="a-2", order_id="o2")
        add_server_event(site, now, identified_user_id="user-9", order_id="o9")
        add_server_event(other, now, identified_user_id="user-1", order_id="o1")
        add_crawl_hit(site, now)
        rollups.rebuild()
    return site, other


def visits_left(app) -> list[tuple]:
    with db(app):
        return list(Visit.select(Visit.site_id, Visit.session_id, Visit.visitor)
                    .order_by(Visit.site_id, Visit.session_id).tuples())


def remaining(app, site_id: int) -> tuple[list[tuple], list[tuple]]:
    with db(app):
        events = sorted(Event.select(Event.anonymous_id, Event.user_id)
                        .where(Event.site_id == site_id).tuples(), key=str)
        server = sorted(ServerEvent.select(ServerEvent.order_id)
                        .where(ServerEvent.site_id == site_id).tuples())
    return events, server


def test_erase_a_user_with_the_browsers_it_was_seen_with(app, people):
    site, other = people
    lines = run(app, "data", "erase", "std.example", "--user-id", "user-1")
    assert lines[0] == ("Erased user id 'user-1' of std.example and the 2 anonymous id(s) it "
                        "was seen with.")
    assert table_lines(lines) == {"event": 4, "server_event": 2, "visitor_state": 0, "visit": 3}
    assert remaining(app, site) == ([("a-9", "user-9")], [("o9",)])
    assert visits_left(app) == [(site, "s-9", "a-9"), (other, "s-1", "a-1")]
    assert remaining(app, other) == ([("a-1", "user-1")], [("o1",)])
    assert counts(app)["crawl_hit"] == 1
    again = run(app, "data", "erase", "std.example", "--user-id", "user-1")
    assert table_lines(again) == {"event": 0, "server_event": 0, "visitor_state": 0, "visit": 0}


def test_erase_an_anonymous_id(app, people):
    site, other = people
    lines = run(app, "data", "erase", "std.example", "--anonymous-id", "a-2")
    assert lines[0] == "Erased anonymous id 'a-2' of std.example."
    assert table_lines(lines) == {"event": 2, "server_event": 1, "visitor_state": 0, "visit": 2}
    events, server = remaining(app, site)
    assert ("a-2", None) not in events and ("a-2", "user-1") not in events and len(events) == 3
    assert server == [("o1",), ("o9",)]
    assert len(remaining(app, other)[0]) == 1
    assert visits_left(app) == [(site, "s-1", "a-1"), (site, "s-9", "a-9"), (other, "s-1", "a-1")]


@pytest.mark.parametrize("args", [[], ["--user-id", "u", "--anonymous-id", "a"]])
def test_erase_needs_exactly_one_id(app, std_site, args):
    result = app.test_cli_runner().invoke(args=["data", "erase", "std.example", *args])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.strip() == (
        "Error: give exactly one of --user-id ID or --anonymous-id ID.")


def test_erase_on_an_unknown_site_fails_with_one_line(app):
    result = app.test_cli_runner().invoke(args=["data", "erase", "nope.example", "--user-id", "u"])
    assert result.exit_code == 1
    assert result.stderr.strip() == "Error: no site with domain 'nope.example'."


def test_erase_in_small_transactions(app, std_site):
    with db(app):
        for _ in range(11):
            add_event(std_site.site.id, utcnow(), anonymous_id="a-1", user_id="u-1")
        browsers, deleted = retention.erase_user(std_site.site.id, "u-1", batch_rows=3)
    assert (browsers, deleted) == (["a-1"], {"event": 11, "server_event": 0,
                                             "visitor_state": 0, "visit": 0})



def visit_table(app) -> list[dict]:
    with db(app):
        return [{column: getattr(row, column) for column in visits.COLUMNS}
                for row in Visit.select().order_by(Visit.site_id, Visit.session_id)]


def test_erasure_leaves_no_visit_of_the_person_through_http(client, app, std_site, free_site):
    """Visits stored by ingest: the erased browser's own visit goes, a visit it shared with
    another browser is derived again from the other's events alone, other sites are untouched,
    and the erased ids are in no column of the visit table."""
    def send(site, session: str, anonymous: str, path: str, ago_ms: int = 0, **fields) -> None:
        body = batch([event(pageUrl=f"https://std.example{path}",
                            timestamp=1_780_000_000_000 - ago_ms)],
                     timestamp=1_780_000_000_000, sessionId=session, anonymousId=anonymous,
                     **fields)
        assert post_json(client, "/api/events", body, site.write_headers()).status_code == 200

    send(std_site, "own", "erased-browser", "/own-entry", userId="erased-user")
    send(std_site, "own", "erased-browser", "/own-exit")
    send(std_site, "shared", "erased-browser", "/erased-entry", ago_ms=60_000)
    send(std_site, "shared", "kept-browser", "/kept-page")
    send(std_site, "stranger", "kept-browser", "/other")
    send(free_site, "own", "erased-browser", "/elsewhere", userId="erased-user")
    response = post_json(client, "/api/goals", goal(session_id="goal-visit",
                                                    anonymous_id="erased-browser"),
                         std_site.write_headers())
    assert response.status_code == 200
    before = {(row["site_id"], row["session_id"]): row for row in visit_table(app)}
    assert before[(std_site.site.id, "shared")]["entry_page"] == "/erased-entry"
    assert before[(std_site.site.id, "shared")]["visitor"] == "kept-browser"

    with db(app):
        browsers, deleted = retention.erase_user(std_site.site.id, "erased-user")
    assert browsers == ["erased-browser"]
    assert (deleted["event"], deleted["visit"]) == (4, 2)  # "own", "goal-visit"; "shared" stays
    after = visit_table(app)
    pages, slots = page_table(app), slot_table(app)
    with db(app):
        rollups.rebuild()
    # the pages and quarter hours ingest kept, less the erased events: as derived anew
    assert (visit_table(app), page_table(app), slot_table(app)) == (after, pages, slots)
    assert sum(count for *_, count, _weight, _top in slot_table(app)) == 3
    assert not any("erased" in str(value) for row in pages for value in row.values()
                   if row["site_id"] == std_site.site.id)
    shared = {(row["site_id"], row["session_id"]): row for row in after}[
        (std_site.site.id, "shared")]
    assert (shared["entry_page"], shared["exit_page"], shared["events"], shared["visitor"]) == (
        "/kept-page", "/kept-page", 1, "kept-browser")
    assert [(row["site_id"], row["session_id"]) for row in after] == [
        (std_site.site.id, "shared"), (std_site.site.id, "stranger"), (free_site.site.id, "own")]
    std_rows = [row for row in after if row["site_id"] == std_site.site.id]
    assert not any("erased" in str(value) for row in std_rows for value in row.values())


def test_erasing_an_anonymous_id_rebuilds_its_visits(client, app, std_site):
    for session, anonymous in (("s-1", "a-1"), ("s-1", "a-2"), ("s-2", "a-2")):
        body = batch(1, sessionId=session, anonymousId=anonymous)
        assert post_json(client, "/api/events", body, std_site.write_headers()).status_code == 200
    with db(app):
        assert retention.erase_anonymous(std_site.site.id, "a-2")["visit"] == 1
    assert visits_left(app) == [(std_site.site.id, "s-1", "a-1")]
    with db(app):
        assert Visit.get().events == 1
