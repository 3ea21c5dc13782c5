"""The rollups (app.rollups: visits, visit_pages, event_slots) as the merges after ingest keep
them (app.rollups.merging): after any sequence of stored batches, merged request by request (the
tests' apps merge in each request) or several at once, their rows are exactly what
`merging.rebuild()` derives from the stored events (the quarter hours' summed over shards).
Through HTTP on both databases; the group statement (PostgreSQL) through store.store_group,
whose batches one merge takes together.

Event times are set by a clock standing in for the receive time (pipeline.utcnow), so that two
batches can hold page views of the very same instant (the tie rule of app.rollups.visits).
"""
from datetime import datetime, timedelta
from typing import Any

import orjson
import pytest

from app.context.request import RequestContext
from app.rollups import visits
from app.tracking import ingest, pipeline, store
from app.tracking.quota import keeps_session, period_of, shard
from models import Event
from models.site import utcnow
from tests.fixtures.context import GERMAN_ADDRESS, ORIGIN, PHONE_CONTEXT, PHONE_HEADERS, SAFARI_IPAD
from tests.fixtures.database import BACKEND
from tests.fixtures.helpers import db
from tests.fixtures.rollups import assert_as_rebuilt, page_table, slot_table
from tests.fixtures.tracking import batch, event, goal, seed_usage

SENT_MS = 1_780_000_000_000  # the client clock: only differences from it count
TABLET_HEADERS = {"Origin": ORIGIN, "User-Agent": SAFARI_IPAD, "Accept-Language": "fr-CA"}
BROWSER_HEADERS = {"Origin": ORIGIN, **PHONE_HEADERS}


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The receive time of the next request: an hour ago, to the second, then as set."""
    at = Clock(utcnow().replace(microsecond=0) - timedelta(hours=1))
    monkeypatch.setattr(pipeline, "utcnow", at)
    return at


def ms(delta: timedelta) -> int:
    return round(delta / timedelta(milliseconds=1))


def at_time(type_: str, path: str, occurred: datetime, received: datetime,
            **fields: Any) -> dict[str, Any]:
    """An event that ingest will place at `occurred`, in a batch received at `received`."""
    return event(type_, pageUrl=ORIGIN + path, timestamp=SENT_MS - ms(received - occurred),
                 **fields)


def send(client, site, clock: Clock, received: datetime, events: list[tuple],
         headers: dict[str, str] | None = None, address: str = GERMAN_ADDRESS,
         **fields: Any) -> dict[str, Any]:
    """POST one batch received at `received`; `events` as (type, path, occurred_at[, fields])."""
    clock.now = received
    body = batch([at_time(kind, path, occurred, received, **(extra[0] if extra else {}))
                  for kind, path, occurred, *extra in events],
                 timestamp=SENT_MS, **{"sessionId": "visit-1", **fields})
    return post_body(client, site, body, headers, address)


def post_body(client, site, body: dict[str, Any], headers: dict[str, str] | None = None,
              address: str = GERMAN_ADDRESS, path: str = "/api/events") -> dict[str, Any]:
    response = client.post(path, data=orjson.dumps(body), content_type="application/json",
                           headers=site.write_headers(**(headers or {})),
                           environ_base={"REMOTE_ADDR": address})
    assert response.status_code == 200, response.get_data()
    return response.get_json()


def only_visit(app) -> dict[str, Any]:
    (row,) = assert_as_rebuilt(app)
    return row


# --- figures worked out by hand ------------------------------------------------------------

def test_one_visit_by_hand(client, app, std_site, clock):
    t0 = clock.now
    send(client, std_site, clock, t0, [
        ("pageview", "/pricing?utm_source=newsletter&utm_medium=email", t0 - timedelta(seconds=90),
         {"referrer": "https://mail.example/"}),
        ("click", "/pricing", t0 - timedelta(seconds=80)),
        ("scroll", "/pricing", t0 - timedelta(seconds=70))], BROWSER_HEADERS,
        anonymousId="anon-b", fingerprint={"screenWidth": 412})
    t1 = t0 + timedelta(minutes=3)
    send(client, std_site, clock, t1, [
        ("pageview", "/docs", t1 - timedelta(milliseconds=1500)),
        ("custom", "/docs", t1, {"name": "video"}),
        ("heartbeat", "/docs", t1)], TABLET_HEADERS, anonymousId="anon-a")
    row = only_visit(app)
    assert row == {
        "site_id": std_site.site.id, "session_id": "visit-1", "visitor": "anon-b",
        "started_at": t0 - timedelta(seconds=90), "ended_at": t1, "events": 6,
        "pageviews": 2, "interactions": 3, "weight": 1.0,
        "heartbeats": 1.0, "uniform": False, "plain": False,  # anon-b, then anon-a
        "lasting": False, "storage_free": None,
        "entry_at": t0 - timedelta(seconds=90), "entry_page": "/pricing",
        "source": "newsletter", "channel": "Email", "referrer": "https://mail.example/",
        "utm_source": "newsletter", "utm_medium": "email", "utm_campaign": None,
        "utm_content": None, "utm_term": None,
        **dict(zip(("country", "device", "browser", "browser_version", "os", "os_version",
                    "language", "screen"), PHONE_CONTEXT, strict=True)),
        "exit_at": t1 - timedelta(milliseconds=1500), "exit_page": "/docs"}


def test_one_visits_pages_and_quarter_hours_by_hand(client, app, std_site, clock):
    """The same visit's page rows (app.visit_pages) and quarter-hour rows (app.event_slots)."""
    t0 = clock.now
    send(client, std_site, clock, t0, [
        ("pageview", "/pricing?utm_source=x", t0 - timedelta(seconds=90)),
        ("click", "/pricing", t0 - timedelta(seconds=80)),
        ("scroll", "/pricing#plans", t0 - timedelta(seconds=70))], BROWSER_HEADERS,
        anonymousId="anon-b")
    t1 = t0 + timedelta(minutes=3)
    send(client, std_site, clock, t1, [
        ("pageview", "/docs", t1 - timedelta(milliseconds=1500)),
        ("custom", "/docs", t1, {"name": "video"}), ("heartbeat", "/docs", t1)],
        TABLET_HEADERS, anonymousId="anon-a")
    assert_as_rebuilt(app)
    site = std_site.site.id
    assert page_table(app) == [
        {"site_id": site, "session_id": "visit-1", "page": "/docs", "visitor": "anon-a",
         "started_at": t1 - timedelta(milliseconds=1500), "ended_at": t1, "events": 3,
         "pageviews": 1, "events_weight": 3.0, "pageviews_weight": 1.0, "weight": 1.0},
        {"site_id": site, "session_id": "visit-1", "page": "/pricing", "visitor": "anon-b",
         "started_at": t0 - timedelta(seconds=90), "ended_at": t0 - timedelta(seconds=70),
         "events": 3, "pageviews": 1, "events_weight": 3.0, "pageviews_weight": 1.0,
         "weight": 1.0}]
    slots = slot_table(app)
    by_type: dict[str, int] = {}
    for _site, slot, kind, count, weight, top in slots:
        assert slot.minute % 15 == 0 and (slot.second, slot.microsecond) == (0, 0)
        assert (weight, top) == (count, 1.0)
        by_type[kind] = by_type.get(kind, 0) + count
    assert by_type == {"pageview": 2, "click": 1, "scroll": 1, "custom": 1, "heartbeat": 1}
    with db(app):
        for event in Event.select():
            slot = event.occurred_at.replace(minute=event.occurred_at.minute // 15 * 15,
                                             second=0, microsecond=0)
            assert (site, slot, event.type) in {row[:3] for row in slots}


# --- sequences of batches ----------------------------------------------------------------------

def test_a_visit_over_several_batches(client, app, std_site, clock):
    t0 = clock.now
    for minute in range(4):
        received = t0 + timedelta(minutes=minute)
        send(client, std_site, clock, received, [
            ("pageview", f"/page-{minute}", received - timedelta(seconds=20)),
            ("click", f"/page-{minute}", received - timedelta(seconds=10))], BROWSER_HEADERS)
    row = only_visit(app)
    assert (row["events"], row["pageviews"], row["interactions"]) == (8, 4, 4)
    assert (row["entry_page"], row["exit_page"]) == ("/page-0", "/page-3")
    assert (row["uniform"], row["plain"], row["lasting"], row["heartbeats"]) == (
        True, True, False, 0)


def test_a_visit_is_storage_free_once_one_of_its_events_is(client, app, std_site, clock):
    """A batch with a visitor id of its own, then one of the same session whose visitor id
    ingest derived ("-"): NULL after the first merge, TRUE after the second, and a batch
    after it leaves it TRUE, as the rebuild derives it."""
    t0 = clock.now
    for minute, anonymous_id, storage_free in ((0, "anon-a", None), (1, "-", True),
                                               (2, "anon-a", True)):
        received = t0 + timedelta(minutes=minute)
        send(client, std_site, clock, received, [("pageview", "/", received)], BROWSER_HEADERS,
             anonymousId=anonymous_id)
        assert only_visit(app)["storage_free"] is storage_free


def test_a_visit_of_a_day_or_more_is_lasting(client, app, std_site, clock):
    """A tab left open: the same session's batches 23 hours apart, then 25."""
    t0 = clock.now - timedelta(days=2)
    send(client, std_site, clock, t0, [("pageview", "/", t0)], BROWSER_HEADERS)
    later = t0 + timedelta(hours=23)
    send(client, std_site, clock, later, [("heartbeat", "/", later)], BROWSER_HEADERS)
    assert only_visit(app)["lasting"] is False
    latest = t0 + timedelta(hours=25)
    send(client, std_site, clock, latest, [("heartbeat", "/", latest)], BROWSER_HEADERS)
    row = only_visit(app)
    assert (row["lasting"], row["plain"], row["ended_at"] - row["started_at"]) == (
        True, True, timedelta(hours=25))


def test_a_later_batch_with_an_earlier_page_view_becomes_the_entry(client, app, std_site, clock):
    t0 = clock.now
    send(client, std_site, clock, t0, [("pageview", "/second", t0)], BROWSER_HEADERS)
    row = only_visit(app)
    assert (row["entry_page"], row["exit_page"], row["device"]) == ("/second", "/second",
                                                                   "Mobile")
    # Sent later, happened earlier (a queue flushed late), from another browser context.
    t1 = t0 + timedelta(seconds=30)
    send(client, std_site, clock, t1, [("pageview", "/first?utm_source=ad", t0 - timedelta(
        minutes=1)), ("click", "/first", t0 - timedelta(seconds=50))], TABLET_HEADERS,
        address="203.0.113.9")
    row = only_visit(app)
    assert (row["entry_page"], row["source"], row["exit_page"]) == ("/first", "ad", "/second")
    assert (row["device"], row["language"], row["started_at"], row["ended_at"]) == (
        "Tablet", "fr", t0 - timedelta(minutes=1), t0)
    # A page view between the two is neither entry nor exit; a later one is the exit.
    t2 = t1 + timedelta(seconds=30)
    send(client, std_site, clock, t2, [("pageview", "/middle", t0 - timedelta(seconds=30))])
    send(client, std_site, clock, t2, [("pageview", "/last", t2)])
    row = only_visit(app)
    assert (row["entry_page"], row["exit_page"], row["pageviews"]) == ("/first", "/last", 4)
    assert row["device"] == "Tablet"


def test_page_views_of_the_same_instant_the_first_stored_enters_the_last_exits(
        client, app, std_site, clock):
    t0 = clock.now
    same = t0 - timedelta(seconds=5)
    send(client, std_site, clock, t0, [("pageview", "/a", same)], BROWSER_HEADERS)
    send(client, std_site, clock, t0 + timedelta(seconds=5), [("pageview", "/b", same)],
         TABLET_HEADERS)
    row = only_visit(app)
    assert (row["entry_page"], row["exit_page"], row["device"]) == ("/a", "/b", "Mobile")
    assert row["entry_at"] == row["exit_at"] == same
    # Within one batch too: the first of equal times enters, the last exits.
    send(client, std_site, clock, t0 + timedelta(seconds=9), [
        ("pageview", "/c", same), ("pageview", "/d", same)], TABLET_HEADERS, sessionId="visit-2")
    rows = assert_as_rebuilt(app)
    assert [(row["entry_page"], row["exit_page"]) for row in rows] == [("/a", "/b"),
                                                                       ("/c", "/d")]


def test_a_resent_batch_is_not_counted_twice(client, app, std_site, clock):
    t0 = clock.now
    body = batch([at_time("pageview", "/", t0, t0), at_time("click", "/", t0, t0)],
                 timestamp=SENT_MS, sessionId="visit-1")
    assert post_body(client, std_site, body, BROWSER_HEADERS) == {"success": True, "count": 2}
    clock.now = t0 + timedelta(seconds=10)  # the resend's events would be ten seconds later
    assert post_body(client, std_site, body, TABLET_HEADERS) == {"success": True, "count": 2,
                                                                 "duplicate": True}
    row = only_visit(app)
    assert (row["events"], row["pageviews"], row["ended_at"], row["device"]) == (
        2, 1, t0, "Mobile")


def test_a_batch_without_page_views_is_a_session_until_one_arrives(client, app, std_site,
                                                                     clock):
    t0 = clock.now
    send(client, std_site, clock, t0, [("click", "/", t0), ("heartbeat", "/", t0)],
         BROWSER_HEADERS)
    row = only_visit(app)
    assert (row["events"], row["pageviews"], row["interactions"]) == (2, 0, 2)
    assert {column: row[column] for column in (*visits.ENTRY_COLUMNS, *visits.EXIT_COLUMNS)
            } == dict.fromkeys((*visits.ENTRY_COLUMNS, *visits.EXIT_COLUMNS))
    send(client, std_site, clock, t0 + timedelta(seconds=1), [("pageview", "/late", t0)],
         TABLET_HEADERS)
    row = only_visit(app)
    assert (row["pageviews"], row["entry_page"], row["exit_page"], row["device"]) == (
        1, "/late", "/late", "Tablet")


def test_a_page_view_without_a_path_of_its_own(client, app, std_site, clock):
    """A page URL that is neither absolute nor a path stores no `path`; the visit's entry and
    exit page are its first and last page view's stored path, as event:page reads it (none
    for those: nothing is parsed from a URL at read time)."""
    t0 = clock.now
    clock.now = t0
    body = batch([event("pageview", pageUrl="about:blank", timestamp=SENT_MS - 2000),
                  event("pageview", pageUrl="http://[::1/x?y", timestamp=SENT_MS - 1000),
                  event("pageview", pageUrl="app://settings/a?b#c", timestamp=SENT_MS)],
                 timestamp=SENT_MS, sessionId="visit-1")
    post_body(client, std_site, body, BROWSER_HEADERS)
    send(client, std_site, clock, t0, [("pageview", "/", t0 - timedelta(seconds=3))],
         sessionId="visit-2")
    clock.now = t0 + timedelta(seconds=1)
    post_body(client, std_site, batch([event("pageview", pageUrl="https:/x#y",
                                             timestamp=SENT_MS)],
                                      timestamp=SENT_MS, sessionId="visit-2"))
    post_body(client, std_site, batch([event("pageview", pageUrl="http://[::1/x?y",
                                             timestamp=SENT_MS)],
                                      timestamp=SENT_MS, sessionId="visit-3"))
    rows = assert_as_rebuilt(app)
    assert [(row["entry_page"], row["exit_page"]) for row in rows] == [
        (None, "/a"), ("/", None), (None, None)]
    with db(app):
        assert [e.path for e in Event.select().order_by(Event.id)] == [
            None, None, "/a", "/", None, None]


# --- goals, context, sampling, storage-free -----------------------------------------------------

def test_goals_join_their_session_and_those_without_one_have_no_visit(client, app, std_site,
                                                                     clock):
    t0 = clock.now
    send(client, std_site, clock, t0, [("pageview", "/shop", t0 - timedelta(seconds=30))],
         BROWSER_HEADERS)
    clock.now = t0 + timedelta(seconds=5)
    earlier = (t0 - timedelta(minutes=2)).isoformat() + "Z"  # the goal's own time counts
    for body in (goal(session_id="visit-1", anonymous_id="anon-z", client_timestamp=earlier),
                 goal(session_id="visit-1"),
                 goal(anonymous_id="anon-1"), goal()):
        assert post_body(client, std_site, body, TABLET_HEADERS, path="/api/goals") == {
            "success": True}
    row = only_visit(app)
    assert (row["events"], row["pageviews"], row["interactions"]) == (3, 1, 2)
    assert (row["started_at"], row["ended_at"], row["visitor"]) == (
        t0 - timedelta(minutes=2), t0 + timedelta(seconds=5), "anon-z")
    assert (row["entry_page"], row["device"]) == ("/shop", "Mobile")
    with db(app):
        assert Event.select().where(Event.session_id.is_null()).count() == 2


def test_the_visit_context_is_the_first_page_views_request(client, app, std_site, clock):
    t0 = clock.now
    send(client, std_site, clock, t0, [("click", "/", t0 - timedelta(seconds=9))],
         TABLET_HEADERS)  # no page view: its request is no visit's context
    send(client, std_site, clock, t0, [("pageview", "/", t0 - timedelta(seconds=5))],
         BROWSER_HEADERS, fingerprint={"screenWidth": 412})
    send(client, std_site, clock, t0 + timedelta(seconds=1), [("pageview", "/next", t0)],
         TABLET_HEADERS)
    send(client, std_site, clock, t0, [("pageview", "/", t0)])  # a backend: no context
    row = only_visit(app)
    assert tuple(row[column] for column in ("country", "device", "browser", "browser_version",
                                            "os", "os_version", "language", "screen")
                 ) == PHONE_CONTEXT


def test_the_weight_is_the_largest_of_the_visits_batches(make_app, make_site, monkeypatch):
    app = make_app(USAGE_CACHE_SECONDS=0, SAMPLE_RATE=0.5)
    client = app.test_client()
    clock = Clock(utcnow().replace(microsecond=0))
    monkeypatch.setattr(pipeline, "utcnow", clock)
    site = make_site("busy.example", "standard", monthly_quota=10)
    sessions = [f"session-{i}" for i in range(50)]
    kept = next(s for s in sessions if keeps_session(s, 0.5))
    dropped = next(s for s in sessions if not keeps_session(s, 0.5))
    seed_usage(app, site.site.id, 8)
    t0 = clock.now
    # Under the quota: stored at weight 1; then over it, sampled at rate 0.5: weight 2.
    assert send(client, site, clock, t0, [("pageview", "/", t0)] * 2, sessionId=kept)[
        "count"] == 2
    assert send(client, site, clock, t0, [("pageview", "/", t0)], sessionId=kept) == {
        "success": True, "count": 1, "sampled": True}
    assert send(client, site, clock, t0, [("pageview", "/", t0)], sessionId=dropped) == {
        "success": True, "count": 0, "sampled": True}
    row = only_visit(app)
    assert (row["session_id"], row["weight"], row["events"]) == (kept, 2.0, 3)
    assert row["uniform"] is False  # weights 1, 1, then 2
    (page,) = page_table(app)
    assert (page["events"], page["events_weight"], page["pageviews_weight"], page["weight"]) == (
        3, 4.0, 4.0, 2.0)


def test_storage_free_batches_are_visits_of_their_derived_ids(client, app, std_site):
    def send_free(address: str, events: list[dict]) -> None:
        post_body(client, std_site, batch(events, anonymousId="-", sessionId="-"),
                  {"User-Agent": PHONE_HEADERS["User-Agent"]}, address)

    now = utcnow()  # the real clock: the derived visits are split by it
    minute = 60_000
    sent = int(now.timestamp() * 1000)
    send_free("203.0.113.7", [event(timestamp=sent - 40 * minute, pageUrl=ORIGIN + "/old"),
                              event(timestamp=sent, pageUrl=ORIGIN + "/new")])
    send_free("203.0.113.7", [event("click")])
    send_free("198.51.100.23", [event()])
    response = client.post("/api/goals", json=goal(anonymous_id="-", session_id="-"),
                           headers=std_site.write_headers(
                               **{"User-Agent": PHONE_HEADERS["User-Agent"]}),
                           environ_base={"REMOTE_ADDR": "198.51.100.23"})
    assert response.status_code == 200
    rows = assert_as_rebuilt(app)
    with db(app):
        derived = {(e.session_id, e.anonymous_id) for e in Event.select()}
    assert {(row["session_id"], row["visitor"]) for row in rows} == derived
    assert sorted(row["events"] for row in rows) == [2, 3]  # 40 minutes apart: still one visit
    assert "-" not in {row["session_id"] for row in rows} | {row["visitor"] for row in rows}


def test_sites_and_sessions_are_apart(client, app, make_site, clock):
    first, second = make_site("one.example"), make_site("two.example")
    t0 = clock.now
    for site in (first, second):
        for session in ("s-1", "s-2"):
            send(client, site, clock, t0, [("pageview", f"/{session}", t0)], sessionId=session)
    rows = assert_as_rebuilt(app)
    assert [(row["site_id"], row["session_id"], row["events"]) for row in rows] == [
        (site.site.id, session, 1) for site in (first, second) for session in ("s-1", "s-2")]


# --- the group statement (PostgreSQL) -----------------------------------------------------------

def group_rows(site_id: int, key: str, received: datetime, events: list[tuple],
               context: RequestContext, session: str = "visit-1",
               anonymous: str = "anon-1", weight: float = 1.0) -> store.BatchRows:
    """What ingest hands to the writer for one request, its events made by ingest.event_row."""
    rows = [ingest.event_row(at_time(kind, path, occurred, received), received, SENT_MS,
                             "std.example") for kind, path, occurred in events]
    return store.BatchRows(site_id=site_id, batch_key=key, session_id=session,
                           anonymous_id=anonymous, user_id=None, sent_ts=SENT_MS,
                           received_at=received, weight=weight, events=rows,
                           period=period_of(received), shard=shard(), context=context)


@pytest.mark.skipif(BACKEND != "postgres", reason="group commit is PostgreSQL's")
def test_one_group_of_several_batches_of_a_visit(app, std_site):
    phone = RequestContext(*PHONE_CONTEXT)
    tablet = RequestContext(None, "Tablet", "Safari", "18", "iOS", "18", "fr", "medium")
    site = std_site.site.id
    t0 = utcnow().replace(microsecond=0) - timedelta(hours=1)
    same = t0 - timedelta(seconds=10)
    with db(app):
        # Already stored before the group: its row is merged with the group's.
        store.store(group_rows(site, "k-before", t0, [("pageview", "/stored", t0)], phone))
        group = [
            # keys in the reverse of the group's order: ties follow the group's order
            group_rows(site, "k-9", t0, [("pageview", "/tie-first", same),
                                         ("click", "/tie-first", same)], tablet),
            group_rows(site, "k-8", t0, [("pageview", "/tie-second", same)], phone,
                       anonymous="anon-9", weight=2.0),
            group_rows(site, "k-7", t0 + timedelta(seconds=1), [
                ("heartbeat", "/", t0 + timedelta(seconds=1))], tablet),
            group_rows(site, "k-6", t0, [("pageview", "/late", t0 + timedelta(seconds=2))],
                       tablet, session="visit-2"),
            group_rows(site, "k-5", t0, [("pageview", "/early", t0 - timedelta(seconds=9))],
                       tablet, session="visit-2"),
            group_rows(site, "k-9", t0, [("pageview", "/resent", same)], phone),
            group_rows(site, "k-before", t0, [("pageview", "/stored", t0)], phone),
        ]
        outcomes = store.store_group(group)
    assert [outcome.stored for outcome in outcomes] == [True] * 5 + [False, False]
    first, second = assert_as_rebuilt(app)
    assert (first["entry_page"], first["exit_page"], first["device"]) == (
        "/tie-first", "/stored", "Tablet")
    assert (first["events"], first["pageviews"], first["interactions"], first["weight"],
            first["visitor"], first["ended_at"]) == (5, 3, 2, 2.0, "anon-9",
                                                     t0 + timedelta(seconds=1))
    assert (second["entry_page"], second["exit_page"]) == ("/early", "/late")
    with db(app):
        # A second group: the tie with the stored exit goes to the later stored page view.
        store.store_group([
            group_rows(site, "k-10", t0, [("pageview", "/tie-third", same)], phone),
            group_rows(site, "k-11", t0, [("pageview", "/exit", t0)], phone)])
    first, _ = assert_as_rebuilt(app)
    assert (first["entry_page"], first["exit_page"], first["pageviews"]) == (
        "/tie-first", "/exit", 5)


@pytest.mark.skipif(BACKEND != "postgres", reason="group commit is PostgreSQL's")
def test_a_group_of_page_views_of_one_instant(app, std_site):
    """Twelve batches of one visit in one group, every page view at the same time, their
    batch ids in the reverse of the group's order: the first in the group enters, the last
    exits, as the events' ids say."""
    context = RequestContext(*PHONE_CONTEXT)
    t0 = utcnow().replace(microsecond=0) - timedelta(hours=1)
    group = [group_rows(std_site.site.id, f"key-{99 - i}", t0,
                        [("pageview", f"/p{i}-a", t0), ("pageview", f"/p{i}-b", t0)], context)
             for i in range(12)]
    with db(app):
        assert all(outcome.stored for outcome in store.store_group(group))
    row = only_visit(app)
    assert (row["entry_page"], row["exit_page"], row["pageviews"]) == ("/p0-a", "/p11-b", 24)
