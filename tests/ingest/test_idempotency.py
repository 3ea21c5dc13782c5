"""The `Idempotency-Key` header on /api/goals, /api/server/events and /api/crawl/report: a
repeat within 7 days is answered as the first and stores nothing, also when copies race; a bad
key is a 400 naming the header; a refused request leaves its key free; without the header
nothing changes; the retention job forgets keys after 7 days. Both backends."""
import json
import threading
import time
import urllib.request
from datetime import timedelta

import pytest

from app.ingest.idempotency import answer_once
from app.retention import prune
from models import CrawlHit, Event, IdempotencyKey, ServerEvent, database
from models.site import utcnow
from tests.fixtures.database import BACKEND
from tests.fixtures.helpers import race
from tests.fixtures.tracking import assert_json_error, db, goal, post_json, waiting_on_a_lock

GPTBOT = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2)"
REPORT = {"path": "/pricing?utm=x", "host": "std.example", "userAgent": GPTBOT,
          "ip": "203.0.113.9", "secFetchDest": "", "secFetchMode": ""}
PURCHASE = {"eventName": "purchase", "revenue_cents": 1999, "currency": "USD"}


def counts(app) -> dict[str, int]:
    with db(app):
        return {"goals": Event.select().where(Event.type == "goal").count(),
                "server_events": ServerEvent.select().count(),
                "crawl_hits": CrawlHit.select().count()}


def post_goal(client, site, key: str | None = None, body: dict | None = None):
    headers = site.write_headers(**({"Idempotency-Key": key} if key is not None else {}))
    return post_json(client, "/api/goals", body or goal(), headers)


def post_server_event(client, site, key: str | None = None, body: dict | None = None):
    headers = site.server_headers(**({"Idempotency-Key": key} if key is not None else {}))
    return post_json(client, "/api/server/events", body or PURCHASE, headers)


def post_report(client, site, key: str | None = None, body: dict | None = None):
    headers = site.server_headers(**({"Idempotency-Key": key} if key is not None else {}))
    return post_json(client, "/api/crawl/report", body or REPORT, headers)


def test_a_repeated_goal_is_answered_as_the_first_and_stored_once(client, app, std_site):
    first = post_goal(client, std_site, "goal-key-1")
    again = post_goal(client, std_site, "goal-key-1")
    assert (first.status_code, first.get_json()) == (200, {"success": True})
    assert (again.status_code, again.get_json()) == (200, {"success": True, "duplicate": True})
    assert counts(app) == {"goals": 1, "server_events": 0, "crawl_hits": 0}


def test_a_repeated_server_event_answers_the_first_id_and_is_stored_once(client, app, std_site):
    first = post_server_event(client, std_site, "revenue-key-1").get_json()
    again = post_server_event(client, std_site, "revenue-key-1").get_json()
    with db(app):
        (row,) = ServerEvent.select()
    assert first == {"success": True, "id": str(row.uid), "duplicate": False}
    assert again == {"success": True, "id": str(row.uid), "duplicate": True}
    assert row.amount_minor == 1999


def test_a_repeated_crawl_report_answers_204_and_is_stored_once(client, app, std_site):
    for _ in range(2):
        response = post_report(client, std_site, "crawl-key-1")
        assert response.status_code == 204
        assert response.get_data() == b"" and "Content-Type" not in response.headers
    assert counts(app) == {"goals": 0, "server_events": 0, "crawl_hits": 1}


def test_without_the_header_nothing_changes(client, app, std_site):
    for _ in range(2):
        assert post_goal(client, std_site).get_json() == {"success": True}
        assert post_server_event(client, std_site).get_json()["duplicate"] is False
        assert post_report(client, std_site).status_code == 204
    assert counts(app) == {"goals": 2, "server_events": 2, "crawl_hits": 2}
    with db(app):
        assert IdempotencyKey.select().count() == 0


def test_keys_are_per_site_and_endpoint(client, app, std_site, make_site):
    other = make_site("other.example", "standard")
    assert post_goal(client, std_site, "shared").get_json() == {"success": True}
    assert post_goal(client, other, "shared", goal(page_url="https://other.example/")
                     ).get_json() == {"success": True}
    assert post_server_event(client, std_site, "shared").get_json()["duplicate"] is False
    assert post_report(client, std_site, "shared").status_code == 204
    assert counts(app) == {"goals": 2, "server_events": 1, "crawl_hits": 1}


@pytest.mark.parametrize(("post", "bad_body"), [
    (post_goal, {"goal_name": ""}), (post_server_event, {"eventName": "x", "currency": "USD"}),
    (post_report, {"path": "/"})], ids=["goals", "server events", "crawl report"])
def test_a_repeated_key_with_a_bad_body_is_refused_as_any_bad_body(client, app, std_site, post,
                                                                   bad_body):
    """The body is validated before the key is looked at: a bad one is a 400, key or not."""
    first = post(client, std_site, "used")
    assert first.status_code in (200, 204)
    assert_json_error(post(client, std_site, "used", bad_body), 400)
    assert sum(counts(app).values()) == 1


@pytest.mark.parametrize("key", ["", "x" * 129, "caf\u00e9", "tab\there", "nul\x7f", " lead",
                                 "trail "],
                         ids=["empty", "129 characters", "not ASCII", "tab", "DEL",
                              "leading space", "trailing space"])
@pytest.mark.parametrize("post", [post_goal, post_server_event, post_report],
                         ids=["goals", "server events", "crawl report"])
def test_a_bad_key_is_a_400_naming_the_header_and_stores_nothing(client, app, std_site, post,
                                                                 key):
    response = post(client, std_site, key)
    body = assert_json_error(response, 400, "Idempotency-Key header must be 1 to 128 printable "
                                            "ASCII characters, with no space at either end")
    assert set(body) == {"error"}
    assert counts(app) == {"goals": 0, "server_events": 0, "crawl_hits": 0}


def test_every_printable_ascii_character_makes_a_key(client, app, std_site):
    printable = "".join(chr(code) for code in range(0x21, 0x7f))  # 94 characters, no space
    for key in (printable, "k" * 128, "a b"):
        assert post_goal(client, std_site, key).get_json() == {"success": True}
        assert post_goal(client, std_site, key).get_json()["duplicate"] is True
    assert counts(app)["goals"] == 3


def test_a_refused_request_leaves_its_key_free(client, app, std_site, free_site):
    assert_json_error(post_goal(client, std_site, "retry-me", {"goal_name": ""}), 400)
    assert_json_error(post_server_event(client, free_site, "retry-me"), 403, "Standard plan")
    assert_json_error(post_report(client, std_site, "retry-me", {"path": "/"}), 400)
    assert post_goal(client, std_site, "retry-me").get_json() == {"success": True}
    assert post_server_event(client, std_site, "retry-me-too").get_json()["duplicate"] is False
    assert counts(app) == {"goals": 1, "server_events": 1, "crawl_hits": 0}


def test_a_key_older_than_7_days_is_new_again_and_pruned(client, app, std_site):
    assert post_goal(client, std_site, "old").status_code == 200
    assert post_goal(client, std_site, "recent").status_code == 200
    with db(app):
        IdempotencyKey.update(created_at=utcnow() - timedelta(days=7, minutes=1)).where(
            IdempotencyKey.key == "old").execute()
        IdempotencyKey.update(created_at=utcnow() - timedelta(days=6, hours=23)).where(
            IdempotencyKey.key == "recent").execute()
    assert post_goal(client, std_site, "recent").get_json() == {"success": True,
                                                                "duplicate": True}
    assert post_goal(client, std_site, "old").get_json() == {"success": True}  # stored again
    assert counts(app)["goals"] == 3
    with db(app):
        IdempotencyKey.update(created_at=utcnow() - timedelta(days=8)).where(
            IdempotencyKey.key == "old").execute()
        deleted = prune.prune(prune.PruneCutoffs.at(utcnow(), 12, 30))
        assert deleted["idempotency_key"] == 1
        assert [row.key for row in IdempotencyKey.select()] == ["recent"]


@pytest.mark.parametrize("post", [post_goal, post_server_event, post_report],
                         ids=["goals", "server events", "crawl report"])
def test_racing_repeats_are_stored_once(app, std_site, post):
    """Eight threads, eight connections, one key, at the same moment."""

    def work(_index: int):
        response = post(app.test_client(), std_site, "raced")
        return response.status_code, response.get_json()

    answers = race(8, work)
    assert counts(app)[{post_goal: "goals", post_server_event: "server_events",
                        post_report: "crawl_hits"}[post]] == 1
    statuses = {status for status, _ in answers}
    assert statuses == ({204} if post is post_report else {200})
    if post is not post_report:
        assert sorted(bool(body.get("duplicate")) for _, body in answers) == [False] + [True] * 7


@pytest.mark.skipif(BACKEND != "postgres", reason="PostgreSQL's row locks")
def test_a_repeat_waits_for_the_first_copy_and_sees_it_committed(app, std_site):
    """The first copy's claim is held uncommitted; the repeat's insert waits on it, and once it
    commits the repeat stores nothing and answers the first answer."""
    claimed, finish = threading.Event(), threading.Event()
    site_id = std_site.site.id

    def first_copy():
        with app.test_request_context(), database.connection_context():
            def store_slowly():
                claimed.set()
                assert finish.wait(30)
                return {"success": True, "first": True}

            return answer_once(site_id, "/api/goals", "held", store_slowly).get_json()

    results: list = []
    thread = threading.Thread(target=lambda: results.append(first_copy()))
    thread.start()
    assert claimed.wait(30)
    repeat: list = []
    waiter = threading.Thread(target=lambda: repeat.append(
        post_goal(app.test_client(), std_site, "held").get_json()))
    waiter.start()
    deadline = time.monotonic() + 30
    while not waiting_on_a_lock(app) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert waiting_on_a_lock(app)
    finish.set()
    thread.join(30)
    waiter.join(30)
    assert results == [{"success": True, "first": True}]
    assert repeat == [{"success": True, "first": True, "duplicate": True}]
    assert counts(app)["goals"] == 0  # the goal view never ran for the repeat


def test_the_header_is_in_the_openapi_document(client):
    paths = client.get("/api/openapi.json").get_json()["paths"]
    for path in ("/api/goals", "/api/server/events", "/api/crawl/report"):
        (parameter,) = paths[path]["post"]["parameters"]
        assert parameter["name"] == "Idempotency-Key" and parameter["in"] == "header"
        assert parameter["schema"]["maxLength"] == 128 and not parameter["required"]
    assert "parameters" not in paths["/api/events"]["post"]


@pytest.mark.slow
def test_racing_repeats_against_a_live_server_are_stored_once(app, std_site, start_server):
    """Eight threads send one goal with one key to a real server's two workers at once."""
    server = start_server(workers=2)
    body = json.dumps(goal(goal_name="raced-live")).encode()

    def send(_index: int) -> tuple[int, dict]:
        request = urllib.request.Request(
            f"{server.url}/api/goals", data=body, method="POST",
            headers={"Content-Type": "application/json", "X-API-Key": std_site.write_key,
                     "Idempotency-Key": "live-race"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())

    answers = race(8, send)
    assert sorted(answers, key=lambda answer: bool(answer[1].get("duplicate"))) == [
        (200, {"success": True})] + [(200, {"success": True, "duplicate": True})] * 7
    assert counts(app)["goals"] == 1
