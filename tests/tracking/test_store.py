"""A batch id is stored once per site: resends answer 200 `duplicate: true` with the first count,
also when the copies race (a unique constraint decides, not a read-then-write). 50 racing
requests through a real server: tests/system/test_concurrency.py."""
import threading
import time

import pytest

from app.tracking import store
from models import Batch, database
from models.site import utcnow
from tests.fixtures.database import BACKEND
from tests.fixtures.helpers import race
from tests.fixtures.tracking import (
    batch,
    event,
    post_json,
    store_rows,
    stored_counts,
    stored_events,
    tallies,
    waiting_on_a_lock,
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
    rows = store_rows(std_site.site.id, "raced", 4)

    def work():
        with app.app_context(), database.connection_context():
            return store.store(rows)

    outcomes = race(8, lambda _index: work())
    assert sorted(outcome.stored for outcome in outcomes) == [False] * 7 + [True]
    assert {outcome.count for outcome in outcomes} == {4}
    assert stored_counts(app) == {"events": 4, "batches": 1, "usage": 4}


@pytest.mark.skipif(BACKEND != "postgres", reason="the store statement is PostgreSQL's")
@pytest.mark.parametrize("grouped", [False, True], ids=["alone", "in a group"])
def test_a_copy_committed_while_the_resend_waited_gives_its_count(app, std_site, grouped):
    """The resend's statement waits on the first copy's uncommitted batch row; once that commits
    the statement inserts nothing, and its snapshot, older than the commit, cannot see the
    stored count: the count is read again."""
    site_id = std_site.site.id
    first_copy_inserted, commit_first_copy = threading.Event(), threading.Event()
    outcomes: list[store.Outcome] = []

    def store_first_copy() -> None:
        with app.app_context(), database.connection_context(), database.atomic():
            Batch.insert(site_id=site_id, batch_key="held", event_count=4,
                         received_at=utcnow()).execute()
            first_copy_inserted.set()
            commit_first_copy.wait(timeout=30)

    def store_resend() -> None:
        resend = store_rows(site_id, "held", 1)
        with app.app_context(), database.connection_context():
            outcomes.extend(store.store_group([resend, store_rows(site_id, "other", 2)])
                            if grouped else [store.store(resend)])

    first = threading.Thread(target=store_first_copy)
    first.start()
    assert first_copy_inserted.wait(timeout=10)
    resend = threading.Thread(target=store_resend)
    resend.start()
    deadline = time.monotonic() + 10
    while not (waited := waiting_on_a_lock(app)) and time.monotonic() < deadline:
        time.sleep(0.01)
    commit_first_copy.set()
    first.join(timeout=10)
    resend.join(timeout=10)

    assert waited, "the resend never waited on the first copy"
    assert outcomes[0] == store.Outcome(stored=False, count=4)
    if grouped:
        assert outcomes[1] == store.Outcome(stored=True, count=2)
