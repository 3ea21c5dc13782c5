"""A batch id is stored once per site: resends answer 200 `duplicate: true` with the first count,
also when the copies race (a unique constraint decides, not a read-then-write). 50 racing
requests through a real server: tests/reliability/test_concurrency.py."""
from app.tracking import store
from app.tracking.quota import period_of, shard
from models import database
from models.site import utcnow
from tests.helpers import race
from tests.tracking.helpers import (
    batch,
    event,
    post_json,
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

    results = race(8, lambda _index: work())
    assert sorted(inserted for inserted, _ in results) == [False] * 7 + [True]
    assert {count for _, count in results} == {4}
    assert stored_counts(app) == {"events": 4, "batches": 1, "usage": 4}
