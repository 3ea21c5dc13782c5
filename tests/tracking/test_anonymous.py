"""Storage-free tracking, the server side (docs/ARCHITECTURE.md, "Storage-free tracking"): batches
and goals with "-" ids get a visitor hashed from the site, User-Agent and network under a daily
salt, and visits split after 30 minutes without an event. On both databases, over HTTP (Flask's
client).
"""
import logging
import re
import zlib
from datetime import datetime, timedelta

import pytest

from app.analytics.overview import overview
from app.analytics.period import Period
from app.analytics.revenue import credited, revenue_by
from app.retention import prune
from app.tracking import pipeline
from models import Event, Site, Visit, VisitorSalt, VisitorState
from models.site import utcnow
from tests.fixtures.helpers import database_bytes, race
from tests.fixtures.tracking import (
    CHROME_UA,
    batch,
    db,
    dumps,
    event,
    goal,
    now_ms,
    post_json,
    post_live,
    seed_usage,
    stored_events,
)

FIREFOX_UA = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
HOME = "203.0.113.7"
OFFICE = "198.51.100.23"
MINUTE_MS = 60_000
HEX_ID = re.compile(r"[0-9a-f]{32}")


def send(client, site, address: str = HOME, user_agent: str = CHROME_UA, **fields):
    """POST a storage-free batch (both ids "-") from `address` with `user_agent`."""
    body = batch(**{"anonymousId": "-", "sessionId": "-", **fields})
    response = client.post("/api/events", json=body,
                           headers=site.write_headers(**{"User-Agent": user_agent}),
                           environ_base={"REMOTE_ADDR": address})
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def silent_for(minutes: int) -> list[dict]:
    """Events that happened `minutes` before their batch was sent (ingest's skew rule puts
    them that long before receipt)."""
    now = now_ms()
    return [event(timestamp=now - minutes * MINUTE_MS)]


def ids(app, site_id: int | None = None) -> list[tuple[str, str]]:
    """(anonymous id, session id) of every stored event, in order."""
    return [(row.anonymous_id, row.session_id) for row in stored_events(app, site_id)]


def test_two_batches_of_one_browser_are_one_visitor_and_one_visit(client, app, std_site):
    send(client, std_site, events=2)
    send(client, std_site)
    stored = ids(app)
    assert len(stored) == 3 and len(set(stored)) == 1
    visitor, session = stored[0]
    assert HEX_ID.fullmatch(visitor) and HEX_ID.fullmatch(session) and visitor != session


def test_another_browser_is_another_visitor(client, app, std_site):
    send(client, std_site, user_agent=CHROME_UA)
    send(client, std_site, user_agent=FIREFOX_UA)
    (chrome_visitor, chrome_visit), (firefox_visitor, firefox_visit) = ids(app)
    assert chrome_visitor != firefox_visitor and chrome_visit != firefox_visit


def test_another_network_is_another_visitor_and_another_site_another_id(client, app, std_site,
                                                                        free_site):
    send(client, std_site, address=HOME)
    send(client, std_site, address=OFFICE)
    send(client, free_site, address=HOME)
    visitors = {visitor for visitor, _ in ids(app)}
    assert len(visitors) == 3


@pytest.mark.parametrize(("other", "same"), [
    ("2001:db8:aa:bb:ffff:1:2:3", True),  # a privacy address of the same /64
    ("2001:db8:aa:bc::1", False),  # the next /64
])
def test_an_ipv6_visitor_is_its_64_network(client, app, std_site, other, same):
    send(client, std_site, address="2001:db8:aa:bb::1")
    send(client, std_site, address=other)
    first, second = ids(app)
    assert (first == second) is same


def test_an_ipv4_mapped_address_is_its_ipv4_address(client, app, std_site):
    send(client, std_site, address="192.0.2.9")
    send(client, std_site, address="::ffff:192.0.2.9")
    first, second = ids(app)
    assert first == second


@pytest.mark.parametrize(("silence", "new_visit"), [(29, False), (31, True)])
def test_a_visit_ends_after_30_minutes_without_an_event(client, app, std_site, silence,
                                                        new_visit):
    """Event time, not arrival: the first batch's event happened `silence` minutes before the
    second batch's, both sent now."""
    send(client, std_site, events=silent_for(silence))
    send(client, std_site)
    (visitor, first_visit), (same_visitor, second_visit) = ids(app)
    assert visitor == same_visitor
    assert (first_visit != second_visit) is new_visit


def test_a_visit_is_measured_from_its_latest_event(client, app, std_site):
    """20 + 20 minutes apart: each gap is under 30 minutes, so one visit of 40 minutes."""
    send(client, std_site, events=silent_for(40))
    send(client, std_site, events=silent_for(20))
    send(client, std_site)
    assert len(set(ids(app))) == 1


def test_a_batch_spanning_a_long_silence_stays_one_visit(client, app, std_site):
    """The store writes one session id per batch (module docstring of app.tracking.anonymous):
    the batch is counted in the visit of its first event, and the next batch is measured from
    its last event."""
    send(client, std_site, events=[*silent_for(45), *silent_for(1)])
    send(client, std_site)
    assert len(set(ids(app))) == 1


def test_goals_with_dash_ids_join_the_browsers_visit(client, app, std_site):
    send(client, std_site)
    response = client.post("/api/goals", json=goal(anonymous_id="-", session_id="-"),
                           headers=std_site.write_headers(**{"User-Agent": CHROME_UA}),
                           environ_base={"REMOTE_ADDR": HOME})
    assert response.get_json() == {"success": True}
    page_view, signup = stored_events(app)
    assert signup.type == "goal"
    assert (signup.anonymous_id, signup.session_id) == (page_view.anonymous_id,
                                                        page_view.session_id)


@pytest.mark.parametrize("anonymous_id", [..., None, ""])
def test_a_goal_without_an_anonymous_id_gets_the_visit_of_the_requests_visitor(
        client, app, std_site, anonymous_id):
    send(client, std_site, user_agent=CHROME_UA)
    send(client, std_site, user_agent=FIREFOX_UA)
    response = client.post("/api/goals", json=goal(anonymous_id=anonymous_id, session_id="-"),
                           headers=std_site.write_headers(**{"User-Agent": FIREFOX_UA}),
                           environ_base={"REMOTE_ADDR": HOME})
    assert response.get_json() == {"success": True}
    _, firefox, signup = stored_events(app)
    assert signup.session_id == firefox.session_id
    assert signup.anonymous_id == (None if anonymous_id is ... else anonymous_id)


def test_only_the_dash_id_is_derived(client, app, std_site):
    send(client, std_site, anonymousId="anon-kept")
    send(client, std_site, sessionId="sess-kept")
    (anonymous_id, derived_visit), (derived_visitor, session_id) = ids(app)
    assert (anonymous_id, session_id) == ("anon-kept", "sess-kept")
    assert HEX_ID.fullmatch(derived_visit) and HEX_ID.fullmatch(derived_visitor)


def test_a_backend_batch_is_hashed_from_the_backends_own_request(client, app, std_site):
    """No Origin: a backend posting with "-" is one visitor of its own (its address and
    User-Agent), not the browser's, and its visits are derived the same way."""
    backend = {"address": "10.1.2.3", "user_agent": "python-requests/2.32.3"}
    send(client, std_site)
    send(client, std_site, **backend)
    send(client, std_site, **backend)
    browser, backend_first, backend_second = ids(app)
    assert backend_first == backend_second and backend_first[0] != browser[0]


def test_concurrent_first_requests_of_one_visitor_get_one_visit(app, std_site):
    """Threads released together, each its own client (and database connection): one salt,
    one visitor row, one visit."""
    race(8, lambda _: send(app.test_client(), std_site))
    assert len(set(ids(app))) == 1 and len(ids(app)) == 8
    with db(app):
        assert (VisitorSalt.select().count(), VisitorState.select().count()) == (1, 1)


@pytest.mark.slow
def test_every_worker_derives_the_same_ids_from_the_forwarded_address(start_server, app,
                                                                     std_site):
    """A real server of two workers behind one trusted proxy: the visitor is the address in
    X-Forwarded-For, hashed under the salt all workers share; the address is in no log line of
    egis's."""
    server = start_server(workers=2, env={"EGIS_TRUSTED_PROXIES": "1"}, deploy_config=True)

    def post_from(address: str) -> int:
        body = dumps(batch(anonymousId="-", sessionId="-"))
        headers = std_site.write_headers(**{"User-Agent": CHROME_UA, "X-Forwarded-For": address})
        return post_live(server.url, body, headers)[0]

    assert race(12, lambda _: post_from("203.0.113.5")) == [200] * 12
    assert post_from("203.0.113.6") == 200
    stored = ids(app)
    assert len(stored) == 13 and len(set(stored[:12])) == 1 and stored[12][0] != stored[0][0]
    egis_lines = [line for line in server.log().splitlines() if line.startswith("{")]
    assert any('"route":"/api/events"' in line for line in egis_lines)
    assert not any("203.0.113." in line for line in egis_lines)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def test_the_salt_changes_at_the_utc_day_and_is_gone_after_48_hours(client, app, std_site,
                                                                    monkeypatch):
    day = datetime(2026, 3, 1)
    clock = Clock(day - timedelta(minutes=1))  # 23:59 on the last day of February
    monkeypatch.setattr(pipeline, "utcnow", clock)
    send(client, std_site)
    clock.now = day + timedelta(minutes=1)  # two minutes later, 00:01: a new day, a new salt
    send(client, std_site)
    send(client, std_site)
    yesterday, today, today_again = ids(app)
    assert today == today_again
    assert yesterday[0] != today[0] and yesterday[1] != today[1]
    with db(app):
        salts = {row.day: row.value for row in VisitorSalt.select()}
        assert sorted(salts) == [day.date() - timedelta(days=1), day.date()]
        assert len(set(salts.values())) == 2

        def prune_at(moment: datetime) -> tuple[list, list]:
            deleted = prune.prune(prune.PruneCutoffs.at(moment, 13, 30))
            left = ([row.day for row in VisitorSalt.select().order_by(VisitorSalt.day)],
                    [row.visitor for row in VisitorState.select().order_by(VisitorState.day)])
            return (deleted["visitor_salt"], deleted["visitor_state"]), left

        # February's last day began at 2026-02-28 00:00: kept until 48 hours later.
        assert prune_at(day + timedelta(hours=24) - timedelta(seconds=1)) == (
            (0, 0), ([day.date() - timedelta(days=1), day.date()], [yesterday[0], today[0]]))
        assert prune_at(day + timedelta(hours=24)) == ((1, 1), ([day.date()], [today[0]]))
        assert prune_at(day + timedelta(hours=48)) == ((1, 1), ([], []))


def test_flask_data_prune_deletes_the_salts_of_two_days_ago(app, std_site):
    today = utcnow().date()
    with db(app):
        for age in (0, 1, 2):
            VisitorSalt.of_day(today - timedelta(days=age))
    result = app.test_cli_runner().invoke(args=["data", "prune", "--older-than", "13"])
    assert result.exit_code == 0, result.output
    assert "visitor_salt\t1" in result.stdout.splitlines()
    with db(app):
        assert sorted(row.day for row in VisitorSalt.select()) == [
            today - timedelta(days=1), today]


def test_neither_the_address_nor_the_user_agent_is_stored_or_logged(client, app, std_site,
                                                                     caplog):
    user_agent = "Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/133.0 Probe/7f3a9c"
    addresses = ("203.0.113.199", "2001:db8:7f3a:9c01::42")
    caplog.set_level(logging.DEBUG)  # peewee's statements and their parameters included
    for address in addresses:
        send(client, std_site, address=address, user_agent=user_agent)
        response = client.post("/api/goals", json=goal(anonymous_id="-", session_id="-"),
                               headers=std_site.write_headers(**{"User-Agent": user_agent}),
                               environ_base={"REMOTE_ADDR": address})
        assert response.status_code == 200
    assert len(stored_events(app)) == 4
    dump = database_bytes(app.config["DATABASE_URL"])
    logs = caplog.text
    assert "visitor_state" in logs  # the statements were captured
    secrets = [user_agent, "Probe/7f3a9c", *addresses, "2001:db8:7f3a:9c01"]
    for secret in secrets:
        assert secret.encode() not in dump, secret
        assert secret not in logs, secret
    with db(app):
        assert not Event.select().where((Event.anonymous_id == "-")
                                        | (Event.session_id == "-")).exists()


def test_a_batch_over_quota_is_sampled_by_its_derived_visit(make_app, make_site):
    """Half the visits kept, by the CRC-32 of their derived session id: both batches of a visit
    share its fate, and what is stored is exactly the kept visits."""
    rate = 0.5
    app = make_app(USAGE_CACHE_SECONDS=0, SAMPLE_RATE=rate)
    site = make_site("busy.example", "standard", monthly_quota=10)
    seed_usage(app, site.site.id, 10)
    client = app.test_client()
    answers = {}
    for visitor in range(24):
        address = f"192.0.2.{visitor + 1}"
        answers[address] = [send(client, site, address=address, events=2) for _ in range(2)]
    with db(app):
        visits = {row.session_id for row in VisitorState.select()}
    kept = {visit for visit in visits if zlib.crc32(visit.encode()) / 2**32 < rate}
    assert 0 < len(kept) < len(visits) == 24
    assert {tuple(answer["count"] for answer in pair) for pair in answers.values()} == {
        (2, 2), (0, 0)}
    assert sum(pair[0]["count"] == 2 for pair in answers.values()) == len(kept)
    stored = stored_events(app)
    assert {row.session_id for row in stored} == kept and len(stored) == 4 * len(kept)
    assert {row.weight for row in stored} == {1 / rate}


def test_the_overview_counts_derived_visitors_and_visits(client, app, std_site):
    """Chrome at home: two visits 31 minutes apart (2 + 1 page views); Firefox: one visit."""
    send(client, std_site, events=[*silent_for(31), *silent_for(31)])
    send(client, std_site)
    send(client, std_site, user_agent=FIREFOX_UA)
    today = utcnow().date()
    with db(app):
        counts = overview(std_site.site, Period(today - timedelta(days=1), today))
    assert (counts["visitors"], counts["visits"], counts["pageviews"]) == (2, 3, 4)


def test_revenue_joins_a_derived_visit_through_identify(client, app, std_site):
    send(client, std_site, userId="user-42",
         events=[event(referrer="https://news.example/story")])
    response = post_json(client, "/api/server/events", {
        "eventName": "purchase", "identifiedUserId": "user-42", "amount": 19.99,
        "currency": "EUR", "orderId": "order-1"}, std_site.server_headers())
    assert response.status_code == 200, response.get_json()
    today = utcnow().date()
    with db(app):
        site = Site.get_by_id(std_site.site.id)
        (row,) = revenue_by(credited(site, Period(today - timedelta(days=1), today)), "source")
    assert (row["source"], row["currency"], row["net_minor"]) == ("news.example", "EUR", 1999)


def test_erasing_a_derived_anonymous_id(client, app, std_site):
    send(client, std_site, events=2)
    send(client, std_site, user_agent=FIREFOX_UA)
    (erased, _), _, (kept, _) = ids(app)
    result = app.test_cli_runner().invoke(
        args=["data", "erase", "std.example", "--anonymous-id", erased])
    assert result.exit_code == 0, result.output
    assert {"event\t2", "visitor_state\t1"} <= set(result.stdout.splitlines())
    assert [visitor for visitor, _ in ids(app)] == [kept]
    with db(app):
        assert [row.visitor for row in VisitorState.select()] == [kept]



# --- the storage-free mark (models.Event.storage_free, models.Visit.storage_free) -------------

def marks(app) -> tuple[list[bool | None], dict[str, bool | None]]:
    """(each stored event's storage_free, in order; each visit's, by session id)."""
    with db(app):
        visits = {row.session_id: row.storage_free for row in Visit.select()}
    return [row.storage_free for row in stored_events(app)], visits


def test_a_normal_batch_is_not_marked_and_a_storage_free_one_is(client, app, std_site):
    """The valid variant first: a batch with ids of its own leaves both marks NULL; one with
    "-" ids marks its events and its visit."""
    response = post_json(client, "/api/events", batch(2), std_site.write_headers())
    assert response.status_code == 200, response.get_json()
    assert marks(app) == ([None, None], {"sess-1": None})
    send(client, std_site, events=2)
    events, visits = marks(app)
    assert events == [None, None, True, True]
    (derived_visit,) = set(visits) - {"sess-1"}
    assert visits == {"sess-1": None, derived_visit: True}


def test_a_client_sending_32_hex_characters_of_its_own_is_not_marked(client, app, std_site):
    """An id's shape tells nothing: only ingest knows that it derived one."""
    own = "0123456789abcdef0123456789abcdef"
    send(client, std_site, anonymousId=own, sessionId=own[::-1])
    assert marks(app) == ([None], {own[::-1]: None})


def test_only_a_derived_visitor_marks(client, app, std_site):
    """A backend with a visitor id of its own and a derived visit can be followed; one whose
    visitor id is derived cannot."""
    send(client, std_site, anonymousId="anon-kept")  # the visit derived, the visitor kept
    send(client, std_site, sessionId="sess-kept")  # the visitor derived
    events, visits = marks(app)
    assert events == [None, True]
    assert visits["sess-kept"] is True and list(visits.values()).count(None) == 1


def test_a_goal_with_a_dash_visitor_is_marked_and_one_without_a_visitor_is_not(client, app,
                                                                             std_site):
    for anonymous_id in ("-", ...):
        response = client.post("/api/goals", json=goal(anonymous_id=anonymous_id,
                                                       session_id="-"),
                               headers=std_site.write_headers(**{"User-Agent": CHROME_UA}),
                               environ_base={"REMOTE_ADDR": HOME})
        assert response.get_json() == {"success": True}
    marked, unmarked = stored_events(app)
    assert (marked.storage_free, unmarked.storage_free) == (True, None)
    assert unmarked.anonymous_id is None and marked.session_id == unmarked.session_id
    with db(app):  # the visit holds a storage-free event: it is storage-free
        assert Visit.get(Visit.session_id == marked.session_id).storage_free is True
