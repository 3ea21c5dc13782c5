"""Quota per calendar month, and session-consistent sampling once a site is over it."""
from collections import defaultdict
from datetime import UTC, datetime

import pytest

from app.tracking import quota
from app.tracking.quota import keeps_session
from models import Usage
from tests.fixtures.tracking import (
    batch,
    db,
    event,
    goal,
    post_json,
    seed_usage,
    stored_counts,
    stored_events,
    tallies,
)

RATE = 0.1
SESSIONS = [f"session-{i:04d}" for i in range(400)]


def kept_and_dropped(rate: float = RATE) -> tuple[str, str]:
    kept = next(s for s in SESSIONS if keeps_session(s, rate))
    dropped = next(s for s in SESSIONS if not keeps_session(s, rate))
    return kept, dropped


@pytest.fixture
def over_quota(make_app, make_site):
    """An app without usage caching and a site already at its quota of 10 events."""
    app = make_app(USAGE_CACHE_SECONDS=0)
    site = make_site("busy.example", "standard", monthly_quota=10)
    seed_usage(app, site.site.id, 10)
    return app, app.test_client(), site


def send(client, site, session: str, events: int = 3, **fields):
    response = post_json(client, "/api/events", batch(events, sessionId=session, **fields),
                         site.write_headers())
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_under_quota_nothing_is_sampled(client, app, make_site):
    site = make_site("quiet.example", "free", monthly_quota=10)
    seed_usage(app, site.site.id, 9)
    assert send(client, site, "any", 3) == {"success": True, "count": 3}
    assert {row.weight for row in stored_events(app)} == {1.0}


def test_whole_sessions_are_kept_or_dropped(over_quota):
    app, client, site = over_quota
    answers = {session: send(client, site, session) for session in SESSIONS}
    stored = defaultdict(list)
    for row in stored_events(app):
        stored[row.session_id].append(row)
    kept = 0
    for session, answer in answers.items():
        if keeps_session(session, RATE):
            kept += 1
            assert answer == {"success": True, "count": 3, "sampled": True}
            assert [row.weight for row in stored[session]] == [1 / RATE] * 3
        else:
            assert answer == {"success": True, "count": 0, "sampled": True}
            assert session not in stored
    # CRC-32 is deterministic: this is a fixed number, near the rate.
    assert 0.05 * len(SESSIONS) <= kept <= 0.15 * len(SESSIONS)
    assert sum(len(rows) for rows in stored.values()) == 3 * kept
    assert tallies(app) == {"sampled": 3 * (len(SESSIONS) - kept)}
    assert stored_counts(app) == {"events": 3 * kept, "batches": len(SESSIONS),
                                  "usage": 10 + 3 * kept}


def test_a_kept_session_stays_kept_and_a_dropped_one_stays_dropped(over_quota):
    app, client, site = over_quota
    kept, dropped = kept_and_dropped()
    for _ in range(4):
        assert send(client, site, kept, 2)["count"] == 2
        assert send(client, site, dropped, 2)["count"] == 0
    sessions = {row.session_id for row in stored_events(app)}
    assert sessions == {kept}
    assert tallies(app) == {"sampled": 8}


def test_a_session_crossing_the_quota_is_kept_whole_once_sampled(make_app, make_site):
    app = make_app(USAGE_CACHE_SECONDS=0)
    site = make_site("edge.example", "standard", monthly_quota=5)
    client = app.test_client()
    kept, dropped = kept_and_dropped()
    assert send(client, site, dropped, 3) == {"success": True, "count": 3}
    # 3 used < 5: still under quota when this batch is decided, so it is stored whole.
    assert send(client, site, dropped, 3) == {"success": True, "count": 3}
    assert send(client, site, dropped, 3) == {"success": True, "count": 0, "sampled": True}
    assert send(client, site, kept, 3) == {"success": True, "count": 3, "sampled": True}
    weights = [(row.session_id, row.weight) for row in stored_events(app)]
    assert weights == [(dropped, 1.0)] * 6 + [(kept, 1 / RATE)] * 3


def test_the_usage_cache_counts_what_this_worker_stored(make_app, make_site):
    """With the cache on, a worker's own writes still move its view of usage."""
    app = make_app(USAGE_CACHE_SECONDS=3600)
    site = make_site("cached.example", "standard", monthly_quota=4)
    client = app.test_client()
    _, dropped = kept_and_dropped()
    assert send(client, site, dropped, 4)["count"] == 4
    assert send(client, site, dropped, 1) == {"success": True, "count": 0, "sampled": True}


def test_the_sample_rate_sets_the_weight(make_app, make_site):
    app = make_app(USAGE_CACHE_SECONDS=0, SAMPLE_RATE=0.5)
    site = make_site("half.example", "standard", monthly_quota=1)
    seed_usage(app, site.site.id, 1)
    kept, _ = kept_and_dropped(0.5)
    send(app.test_client(), site, kept, 2)
    assert {row.weight for row in stored_events(app)} == {2.0}


def test_usage_of_another_month_does_not_count(make_app, make_site):
    app = make_app(USAGE_CACHE_SECONDS=0)
    site = make_site("old.example", "standard", monthly_quota=10)
    with db(app):
        Usage.create(site_id=site.site.id, period="2000-01", shard=0, events=1000)
    assert send(app.test_client(), site, kept_and_dropped()[1], 3) == {"success": True,
                                                                       "count": 3}


def test_usage_is_summed_over_shards(make_app, make_site):
    app = make_app(USAGE_CACHE_SECONDS=0)
    site = make_site("sharded.example", "standard", monthly_quota=10)
    for shard in (1, 2, 3):
        seed_usage(app, site.site.id, 4 if shard < 3 else 2, shard=shard)
    assert send(app.test_client(), site, kept_and_dropped()[1], 1)["sampled"] is True


def test_usage_is_written_to_this_workers_shard_only(client, app, std_site):
    from app.tracking.quota import shard

    send(client, std_site, "s", 3)
    send(client, std_site, "s", 2, id="another")
    with db(app):
        rows = [(u.shard, u.events) for u in Usage.select()]
    assert rows == [(shard(), 5)]


def test_goals_are_sampled_by_session_too(over_quota):
    app, client, site = over_quota
    kept, dropped = kept_and_dropped()

    def post_goal(**fields):
        response = post_json(client, "/api/goals", goal(**fields), site.write_headers())
        assert response.status_code == 200
        return response.get_json()

    assert post_goal(session_id=kept) == {"success": True, "sampled": True}
    assert post_goal(session_id=dropped) == {"success": True, "sampled": True}
    assert post_goal(anonymous_id=kept) == {"success": True, "sampled": True}
    assert post_goal() == {"success": True, "sampled": True}  # no session to keep
    rows = stored_events(app)
    assert [(row.type, row.weight) for row in rows] == [("goal", 1 / RATE)] * 2
    assert tallies(app) == {"sampled": 2}


def test_a_resent_sampled_batch_is_a_duplicate(over_quota):
    app, client, site = over_quota
    _, dropped = kept_and_dropped()
    body = batch([event(), event()], sessionId=dropped)
    first = post_json(client, "/api/events", body, site.write_headers()).get_json()
    again = post_json(client, "/api/events", body, site.write_headers()).get_json()
    assert first == {"success": True, "count": 0, "sampled": True}
    assert again == {"success": True, "count": 0, "sampled": True, "duplicate": True}
    assert tallies(app) == {"sampled": 2, "duplicate": 1}


# --- sampling -------------------------------------------------------------------------------

def test_keeps_session_is_deterministic_and_uniform():
    sessions = [f"s{i}" for i in range(20_000)]
    kept = [s for s in sessions if quota.keeps_session(s, 0.1)]
    assert kept == [s for s in sessions if quota.keeps_session(s, 0.1)]
    assert 0.09 < len(kept) / len(sessions) < 0.11
    assert not any(quota.keeps_session(s, 0.0) for s in sessions[:1000])
    assert all(quota.keeps_session(s, 1.0) for s in sessions[:1000])
    # nested rates: a session kept at 10% is kept at 50%
    assert all(quota.keeps_session(s, 0.5) for s in kept)
    assert quota.keeps_session("\ud800", 0.5) in (True, False)  # no encoding error


def test_quota_status():
    state = quota.QuotaStatus(period="2026-06", limit=10, used=12)
    assert (state.remaining, state.sampling) == (0, True)
    state = quota.QuotaStatus(period="2026-06", limit=10, used=9)
    assert (state.remaining, state.sampling) == (1, False)
    assert quota.period_of(datetime(2026, 12, 31, 23, 59)) == "2026-12"


def test_usage_cache(app, std_site):
    from tests.fixtures.tracking import seed_usage

    cache = quota.UsageCache(ttl=3600)
    site_id = std_site.site.id
    period = quota.period_of(datetime.now(UTC))
    seed_usage(app, site_id, 7, shard=1)
    with db(app):
        assert cache.used(site_id, period) == 7
    seed_usage(app, site_id, 5, shard=2)
    with db(app):
        assert cache.used(site_id, period) == 7  # cached
        cache.add(site_id, period, 3)
        assert cache.used(site_id, period) == 10  # this worker's own writes
        cache.add(site_id, "1999-01", 3)  # nothing cached: nothing to move
        cache.clear()
        assert cache.used(site_id, period) == 12
        assert quota.UsageCache(ttl=0).used(site_id, "1999-01") == 0

