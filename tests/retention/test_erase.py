"""Erasure (`flask data erase`, app.retention.erase) on both databases."""

import pytest

from app.retention import erase
from app.rollups import merging, visits
from models import Event, ServerEvent, Visit
from models.site import utcnow
from tests.fixtures.retention import (
    add_crawl_hit,
    add_event,
    add_server_event,
    counts,
    run,
    table_lines,
    visits_left,
)
from tests.fixtures.rollups import page_table, slot_table
from tests.fixtures.tracking import batch, db, event, goal, post_json


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
        merging.rebuild()
    return site, other


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


def test_erase_in_small_transactions(app, std_site):
    with db(app):
        for _ in range(11):
            add_event(std_site.site.id, utcnow(), anonymous_id="a-1", user_id="u-1")
        browsers, deleted = erase.erase_user(std_site.site.id, "u-1", batch_rows=3)
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
        browsers, deleted = erase.erase_user(std_site.site.id, "erased-user")
    assert browsers == ["erased-browser"]
    assert (deleted["event"], deleted["visit"]) == (4, 2)  # "own", "goal-visit"; "shared" stays
    after = visit_table(app)
    pages, slots = page_table(app), slot_table(app)
    with db(app):
        merging.rebuild()
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
        assert erase.erase_anonymous(std_site.site.id, "a-2")["visit"] == 1
    assert visits_left(app) == [(std_site.site.id, "s-1", "a-1")]
    with db(app):
        assert Visit.get().events == 1
