"""Racing copies through the deployed server (2 workers x 4 threads, so requests of both
processes overlap): a batch id and an orderId sent by 50 threads at once are stored once,
and under concurrent load the month's usage counter equals the events actually stored."""
import random
from collections.abc import Iterator
from typing import Any

import pytest
from peewee import fn

from models import Batch, Event, ServerEvent, Usage
from tests.fixtures.database import SiteKeys, create_site
from tests.fixtures.deployment import Deployment, deployment
from tests.fixtures.helpers import db, race
from tests.fixtures.tracking import batch, event, goal, unique
from tests.fixtures.wire import Answer, post

pytestmark = pytest.mark.slow

THREADS = 50
SEED = 20261123


@pytest.fixture(scope="module")
def live(migrated: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    # Usage read fresh on every request, so that sampling starts while the load is running.
    env = {"EGIS_RATE_LIMIT_KEY": "1000000/minute", "EGIS_RATE_LIMIT_IP": "1000000/minute",
           "EGIS_USAGE_CACHE_SECONDS": "0"}
    with deployment(migrated, tmp_path_factory.mktemp("concurrency"), env) as running:
        yield running


def split(answers: list[Answer]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(first copies, duplicates), every answer being a 200."""
    assert [answer.status for answer in answers] == [200] * len(answers), answers
    bodies = [answer.json() for answer in answers]
    return ([body for body in bodies if not body.get("duplicate")],
            [body for body in bodies if body.get("duplicate")])


def test_one_batch_id_from_50_threads_is_stored_once(live):
    body = batch(5)
    answers = race(THREADS, lambda _i: post(live.url, "/api/events", body,
                                            live.std.write_headers()))
    fresh, duplicates = split(answers)
    assert fresh == [{"success": True, "count": 5}]
    assert duplicates == [{"success": True, "count": 5, "duplicate": True}] * (THREADS - 1)
    with db(live.app):
        (stored,) = Batch.select().where(Batch.batch_key == body["id"])
        assert Event.select().where(Event.batch_id == stored.id).count() == 5


def test_one_order_id_from_50_threads_is_stored_once(live):
    body = {"eventName": "purchase", "amount": 120.5, "currency": "USD",
            "orderId": unique("order")}
    answers = race(THREADS, lambda _i: post(live.url, "/api/server/events", body,
                                            live.std.server_headers()))
    fresh, duplicates = split(answers)
    assert len(fresh) == 1 and len(duplicates) == THREADS - 1
    with db(live.app):
        (row,) = ServerEvent.select().where(ServerEvent.order_id == body["orderId"])
    assert {answer["id"] for answer in fresh + duplicates} == {str(row.uid)}
    assert row.amount_minor == 12050


def month_usage_and_events(live: Deployment, site: SiteKeys) -> tuple[int, int]:
    with db(live.app):
        used = Usage.select(fn.SUM(Usage.events)).where(Usage.site_id == site.site.id).scalar()
        return int(used or 0), Event.select().where(Event.site_id == site.site.id).count()


def test_the_usage_counter_equals_what_was_stored_under_concurrent_load(live):
    """50 threads send batches of random sizes (some twice) and goals to a site with room and to
    a site that goes over its quota midway (whole sessions are then sampled)."""
    full = create_site(live.app, "quota.example", "standard", monthly_quota=300)
    sites = (live.std, full)
    before = {site.site.id: month_usage_and_events(live, site) for site in sites}

    def client(index: int) -> list[tuple[int, str, dict[str, Any]]]:
        rng = random.Random(SEED + index)
        sent = []
        for step in range(8):
            site = sites[(index + step) % 2]
            session = f"session-{index}-{step}"
            if site is live.std and step % 4 == 3:
                answer = post(live.url, "/api/goals", goal(session_id=session),
                              site.write_headers())
                sent.append((site.site.id, "goal", answer.json()))
                continue
            body = batch([event() for _ in range(rng.randint(1, 20))], sessionId=session)
            for _copy in range(1 + (rng.random() < 0.3)):  # a resend, as after a lost answer
                answer = post(live.url, "/api/events", body, site.write_headers())
                assert answer.status == 200, answer
                sent.append((site.site.id, "batch", answer.json()))
        return sent

    answers = [item for sent in race(THREADS, client) for item in sent]
    for site in sites:
        mine = [(kind, body) for site_id, kind, body in answers if site_id == site.site.id]
        answered = sum(body["count"] for kind, body in mine
                       if kind == "batch" and not body.get("duplicate"))
        answered += sum(1 for kind, _ in mine if kind == "goal")  # never sampled: room left
        used, stored = month_usage_and_events(live, site)
        assert used - before[site.site.id][0] == stored - before[site.site.id][1] == answered, (
            site.site.domain, used, stored, answered, before)
        assert used == stored
    assert any(body.get("sampled") for _, _, body in answers)  # the full site did sample
    assert month_usage_and_events(live, full)[0] >= 300
