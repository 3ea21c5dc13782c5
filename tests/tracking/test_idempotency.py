"""A batch id is stored once per site: resends answer 200 `duplicate: true` with the first count,
also when the copies race (a unique constraint decides, not a read-then-write)."""
import threading

import pytest

from app.tracking import store
from app.tracking.quota import period_of, shard
from models import database
from models.site import utcnow
from tests.tracking.helpers import (
    batch,
    dumps,
    event,
    post_json,
    post_live,
    stored_counts,
    stored_events,
    tallies,
)


def post(client, site, body):
    response = post_json(client, "/api/events", body, site.write_headers())
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_a_resent_batch_is_stored_once(client, app, std_site):
    body = batch(3)
    assert post(client, std_site, body) == {"success": True, "count": 3}
    for _ in range(3):
        assert post(client, std_site, body) == {"success": True, "count": 3, "duplicate": True}
    assert stored_counts(app) == {"events": 3, "batches": 1, "usage": 3}
    assert tallies(app) == {"duplicate": 3}


def test_the_first_count_wins_even_if_the_resend_differs(client, app, std_site):
    body = batch(2)
    post(client, std_site, body)
    changed = {**body, "events": [event("click") for _ in range(5)]}
    assert post(client, std_site, changed) == {"success": True, "count": 2, "duplicate": True}
    assert [row.type for row in stored_events(app)] == ["pageview", "pageview"]


def test_ids_are_per_site(client, app, std_site, free_site):
    body = batch(1, id="shared-id")
    assert post(client, std_site, body) == {"success": True, "count": 1}
    assert post(client, free_site, body) == {"success": True, "count": 1}
    assert stored_counts(app)["batches"] == 2


def test_a_refused_batch_leaves_its_id_free(client, app, free_site):
    """Nothing of a 403 is stored, the id included: the tracker may resend the rest under it."""
    body = batch([event("pageview"), event("error")], id="retry-me")
    assert post_json(client, "/api/events", body, free_site.write_headers()).status_code == 403
    invalid = batch([event(), event("nope")], id="retry-me")
    assert post_json(client, "/api/events", invalid, free_site.write_headers()).status_code == 400
    assert post(client, free_site, {**body, "events": [event("pageview")]}) == {
        "success": True, "count": 1}


def _race(count: int, work) -> list:
    barrier = threading.Barrier(count)
    results: list = [None] * count
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=10)
            results[index] = work()
        except BaseException as error:  # reported by the test, not lost in the thread
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors, errors
    return results


def test_racing_copies_in_the_store_insert_once(app, std_site):
    """Eight connections store the same batch at the same moment: one wins, seven see it."""
    now = utcnow()
    rows = store.BatchRows(
        site_id=std_site.site.id, batch_key="raced", session_id="s", anonymous_id="a",
        user_id=None, sent_ts=1, received_at=now, weight=1.0, period=period_of(now),
        shard=shard(), events=[{"type": "pageview", "name": None, "page_url": "u",
                                "page_title": None, "referrer": None, "properties": None,
                                "client_ts": 1, "occurred_at": now}] * 4)

    def work():
        with app.app_context(), database.connection_context():
            return store.store(rows), store.first_count(rows.site_id, rows.batch_key)

    results = _race(8, work)
    assert sorted(inserted for inserted, _ in results) == [False] * 7 + [True]
    assert {count for _, count in results} == {4}
    assert stored_counts(app) == {"events": 4, "batches": 1, "usage": 4}


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict]:
    status, _headers, payload = post_live(url, body, headers)
    return status, payload


@pytest.mark.slow
def test_racing_requests_through_gunicorn_store_once(start_gunicorn, app, std_site):
    server = start_gunicorn(workers=4)
    headers = std_site.write_headers()
    for attempt in range(3):  # a few rounds, so the copies really overlap at least once
        body = dumps(batch(5))
        answers = _race(8, lambda body=body: _post(server.url, body, headers))
        assert [status for status, _ in answers] == [200] * 8, answers
        fresh = [answer for _, answer in answers if not answer.get("duplicate")]
        assert fresh == [{"success": True, "count": 5}], answers
        duplicates = [answer for _, answer in answers if answer.get("duplicate")]
        assert duplicates == [{"success": True, "count": 5, "duplicate": True}] * 7
        assert stored_counts(app) == {"events": 5 * (attempt + 1), "batches": attempt + 1,
                                      "usage": 5 * (attempt + 1)}
    assert tallies(app) == {"duplicate": 21}
    assert "Traceback" not in server.log()
    assert len({row.batch_id for row in stored_events(app)}) == 3
