"""Group commit (app.tracking.writer): concurrent batches share a commit, each request hears its
own outcome, a failed commit fails exactly the batches it carried, a batch id is stored once."""
import threading
import time
from collections import Counter
from dataclasses import replace

import pytest
from peewee import IntegrityError

from app.tracking import store
from app.tracking.writer import GroupWriter
from models import Event, database
from tests.fixtures.database import BACKEND
from tests.fixtures.tracking import (
    batch,
    db,
    dumps,
    post_live,
    store_rows,
    stored_counts,
    wait_for_tallies,
)

pytestmark = pytest.mark.skipif(BACKEND != "postgres",
                                reason="group commit is PostgreSQL's (store.store_group)")


@pytest.fixture
def app(make_app):
    """A connection per thread, as a server's request threads hold them: a pool to match."""
    return make_app(DB_MAX_CONNECTIONS=32)


class HeldFirstCommit:
    """store.store_group, whose first commit waits until the other callers have arrived.

    The callers then queue behind it, so the next commit carries all of them together.
    """

    def __init__(self, callers: int) -> None:
        self.callers = callers
        self.arrived = 0
        self.lock = threading.Lock()
        self.groups: list[list[str | None]] = []
        self.holding = threading.Event()

    def arrive(self) -> None:
        with self.lock:
            self.arrived += 1

    def __call__(self, group: list[store.BatchRows]) -> list[store.Outcome]:
        if not self.holding.is_set():
            self.holding.set()
            while self.arrived < self.callers:
                time.sleep(0.001)
            time.sleep(0.2)  # from their arrival to their place in the writer's queue
        self.groups.append([rows.batch_key for rows in group])
        return store.store_group(group)


def run_together(app, writer: GroupWriter, held: HeldFirstCommit,
                 work: list[store.BatchRows]) -> list[store.Outcome | BaseException]:
    """Each batch stored from its own thread (its own connection); the outcome or the error."""
    outcomes: list[store.Outcome | BaseException | None] = [None] * len(work)

    def run(index: int) -> None:
        with app.app_context(), database.connection_context():
            held.arrive()
            try:
                outcomes[index] = writer.store(work[index])
            except Exception as error:  # the outcome under test
                outcomes[index] = error

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(work))]
    threads[0].start()
    assert held.holding.wait(timeout=10)
    for thread in threads[1:]:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return outcomes


def test_concurrent_batches_with_duplicates_are_stored_once_each(app, std_site):
    site_id = std_site.site.id
    keys = [f"k{index % 7}" for index in range(24)]  # seven ids, each sent three or four times
    held = HeldFirstCommit(len(keys))
    writer = GroupWriter(held)
    outcomes = run_together(app, writer, held, [store_rows(site_id, key) for key in keys])

    assert max(len(group) for group in held.groups) > 1
    assert Counter(key for key, outcome in zip(keys, outcomes, strict=True) if outcome.stored) \
        == Counter(set(keys))
    assert {outcome.count for outcome in outcomes} == {2}  # a resend hears the stored count
    assert stored_counts(app) == {"events": 14, "batches": 7, "usage": 14}
    with db(app):
        assert {store.first_count(site_id, key) for key in keys} == {2}


def test_a_failed_commit_fails_exactly_the_batches_it_carried(app, std_site):
    site_id = std_site.site.id
    work = [store_rows(site_id, "first"),
            *(store_rows(site_id, f"good-{index}") for index in range(6)),
            store_rows(site_id, "broken", type_=None)]  # NOT NULL: the whole commit fails
    held = HeldFirstCommit(len(work))
    writer = GroupWriter(held)
    outcomes = run_together(app, writer, held, work)

    (failed_group,) = [group for group in held.groups if "broken" in group]
    assert len(failed_group) > 1
    for batch_rows, outcome in zip(work, outcomes, strict=True):
        if batch_rows.batch_key in failed_group:
            assert isinstance(outcome, IntegrityError)
        else:
            assert outcome == store.Outcome(stored=True, count=2)
    stored = len(work) - len(failed_group)
    assert stored_counts(app) == {"events": 2 * stored, "batches": stored, "usage": 2 * stored}
    # The writer goes on: a retried batch is stored.
    with app.app_context(), database.connection_context():
        assert writer.store(store_rows(site_id, "retried")).stored
    assert stored_counts(app)["batches"] == stored + 1


def test_a_lone_batch_is_stored_by_its_own_thread(app, std_site):
    writer = GroupWriter(store.store_group)
    with app.app_context(), database.connection_context():
        site_id = std_site.site.id
        assert writer.store(store_rows(site_id, "alone", events=3)) == store.Outcome(True, 3)
        assert writer.store(store_rows(site_id, "alone", events=1)) == store.Outcome(False, 3)
    assert stored_counts(app) == {"events": 3, "batches": 1, "usage": 3}


@pytest.mark.slow
def test_racing_requests_in_gthread_workers_store_each_batch_once(start_server, app,
                                                                   std_site):
    """Two gthread workers of four threads (group commit on): copies of eight batches at once."""
    server = start_server(workers=2, deploy_config=True)
    headers = std_site.write_headers()
    bodies = [dumps(batch(index + 1)) for index in range(8)]
    sends = [bodies[index % 8] for index in range(24)]
    answers: list[tuple[int, dict]] = [(0, {})] * len(sends)
    barrier = threading.Barrier(len(sends))

    def send(index: int) -> None:
        barrier.wait(timeout=10)
        status, _headers, payload = post_live(server.url, sends[index], headers)
        answers[index] = (status, payload)

    threads = [threading.Thread(target=send, args=(index,)) for index in range(len(sends))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert [status for status, _ in answers] == [200] * len(sends), answers
    for index, body in enumerate(bodies):
        mine = [payload for (_, payload), sent in zip(answers, sends, strict=True)
                if sent == body]
        assert sorted(mine, key=len) == [
            {"success": True, "count": index + 1},
            {"success": True, "count": index + 1, "duplicate": True},
            {"success": True, "count": index + 1, "duplicate": True}]
    stored = sum(range(1, 9))
    assert stored_counts(app) == {"events": stored, "batches": 8, "usage": stored}
    assert wait_for_tallies(app, {"duplicate": 16}) == {"duplicate": 16}
    assert "Traceback" not in server.log()


@pytest.mark.parametrize("group", [1, 2], ids=["single statement", "group statement"])
def test_null_columns_are_sent_as_absent_and_stored_as_null(app, std_site, group):
    """The statements are sent each event without its null members (store._present): stored,
    those columns are NULL, and a null inside the properties is kept."""
    site = std_site.site.id
    rows = [store_rows(site, f"nulls-{number}", events=1) for number in range(group)]
    for batch_rows in rows:
        batch_rows.events[0].update(name="signup", properties={"plan": None, "seats": 0},
                                    referrer=None, utm_source=None, path="/p")
    with db(app):
        outcomes = store.store_group(rows)
        stored = list(Event.select().where(Event.site_id == site).dicts())
    assert [outcome.stored for outcome in outcomes] == [True] * group
    assert [(event["name"], event["properties"], event["page_title"], event["referrer"],
             event["utm_source"], event["path"], event["user_id"]) for event in stored] == [
        ("signup", {"plan": None, "seats": 0}, None, None, None, "/p", None)] * group


@pytest.mark.parametrize("group", [1, 2], ids=["single statement", "group statement"])
def test_the_storage_free_mark_is_stored_true_or_null(app, std_site, group):
    """A batch whose visitor id ingest derived is stored storage_free TRUE, every other NULL
    (never FALSE), by the single-batch statement and the group statement alike."""
    site = std_site.site.id
    rows = [replace(store_rows(site, f"free-{number}", events=2), storage_free=number == 0)
            for number in range(group)]
    with db(app):
        assert [outcome.stored for outcome in store.store_group(rows)] == [True] * group
        stored = [row.storage_free for row in Event.select().where(Event.site_id == site)
                  .order_by(Event.id)]
    assert stored == [True, True, None, None][:2 * group]


def test_a_request_queued_behind_a_stuck_commit_gives_up_at_its_deadline(app, std_site):
    """A commit stuck on the database (a standby that does not answer) holds the requests
    queued behind it at most until their own deadline: theirs is a DeadlinePassedError (503),
    and a batch no commit took is never stored; one the stuck commit carries is stored once."""
    from flask import g

    from app.storage.deadline import DeadlinePassedError

    site_id = std_site.site.id
    release = threading.Event()
    started = threading.Event()

    def stuck_then_store(group: list[store.BatchRows]) -> list[store.Outcome]:
        if not started.is_set():
            started.set()
            release.wait(timeout=30)
        return store.store_group(group)

    writer = GroupWriter(stuck_then_store)
    first: list[store.Outcome] = []

    def lead() -> None:
        with app.app_context(), database.connection_context():
            first.append(writer.store(store_rows(site_id, "stuck")))

    leader = threading.Thread(target=lead)
    leader.start()
    assert started.wait(timeout=10)
    with app.test_request_context(), database.connection_context():
        g.database_due = time.monotonic() + 0.5
        began = time.monotonic()
        with pytest.raises(DeadlinePassedError):
            writer.store(store_rows(site_id, "queued"))
        assert time.monotonic() - began < 3
    release.set()
    leader.join(timeout=30)
    assert first and first[0].stored
    with db(app):
        assert store.first_count(site_id, "stuck") == 2
        assert store.first_count(site_id, "queued") == 0  # no batch row
