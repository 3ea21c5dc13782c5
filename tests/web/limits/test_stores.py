"""Where the limits count (app.web.limits.stores): Redis shared by workers, memory per worker, and
a store that goes away."""
import json
import logging
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from app.web.limits import StoreHealth, store_health
from tests.fixtures.database import REDIS_URL
from tests.fixtures.limits import assert_limited, events, poll, readyz
from tests.fixtures.tracking import (
    batch,
    dumps,
    goal,
    post_json,
    post_live,
    stored_counts,
    wait_for_tallies,
)

# --- Redis storage --------------------------------------------------------------------------

def test_redis_storage(make_app, std_site, redis_prefix):
    app = make_app(RATELIMIT_STORAGE_URI=REDIS_URL, RATELIMIT_KEY_PREFIX=redis_prefix,
                   RATE_LIMIT_KEY="2/minute")
    client = app.test_client()
    assert events(client, std_site).status_code == 200
    assert events(client, std_site).status_code == 200
    assert_limited(events(client, std_site))
    stored = list(redis.Redis.from_url(REDIS_URL).scan_iter(f"*{redis_prefix}*"))
    assert stored, "the counters live in Redis"


def test_redis_counts_both_limits_in_one_round_trip_and_in_order(make_app, std_site,
                                                                  free_site, own_redis):
    """The tracking endpoints' two limits (per key, then per client IP) are counted by one
    script call per request; a request the per-key limit refuses is not counted per IP."""
    app = make_app(RATELIMIT_STORAGE_URI=own_redis.url, RATE_LIMIT_KEY="3/minute",
                   RATE_LIMIT_IP="4/minute")
    client = app.test_client()
    store = redis.Redis.from_url(own_redis.url, decode_responses=True)
    assert events(client, std_site).status_code == 200  # the script is loaded on first use
    store.config_resetstat()
    assert events(client, std_site).status_code == 200
    assert post_json(client, "/api/goals", goal(), std_site.write_headers()).status_code == 200
    stats = store.info("commandstats")
    assert stats["cmdstat_evalsha"]["calls"] == 2  # two requests, one round trip each
    assert "cmdstat_eval" not in stats and "cmdstat_script|load" not in stats

    response = events(client, std_site)  # the key's fourth: refused, not counted per IP
    assert response.get_json()["error"] == (
        "Rate limit exceeded (3 per 1 minute); retry after the Retry-After delay.")
    assert events(client, free_site).status_code == 200  # the IP's fourth
    response = events(client, free_site)  # the IP's fifth
    assert response.get_json()["error"] == (
        "Rate limit exceeded (4 per 1 minute); retry after the Retry-After delay.")
    assert 0 < int(response.headers["Retry-After"]) <= 60
    counters = {key: int(store.get(key)) for key in store.scan_iter()}
    assert sorted(counters.values()) == [2, 4, 5]  # free's key, std's key, the IP
    assert all(0 < store.ttl(key) <= 60 for key in counters)
    assert stored_counts(app)["events"] == 4  # three batches of one event, and the goal


def _post(url: str, body: bytes, headers: dict[str, str]) -> int:
    status, response_headers, payload = post_live(url, body, headers, timeout=10)
    if status == 429:
        assert int(response_headers["Retry-After"]) > 0 and "error" in payload
    return status


def post_concurrently(url: str, site, requests: int, threads: int = 4) -> list[int]:
    """POST `requests` one-event batches from `threads` clients at once: both workers busy."""
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(lambda _: _post(url, dumps(batch()), site.write_headers()),
                             range(requests)))


def workers_that_served(server, route: str) -> set[int]:
    """The process ids of the workers whose request log shows `route`."""
    lines = (json.loads(line) for line in server.log().splitlines() if line.startswith("{"))
    return {line["pid"] for line in lines if line.get("route") == route}


def wait_for_workers(server, workers: int) -> None:
    """Poll /healthz, several clients at once, until `workers` workers have answered it (a
    worker still importing the app takes no requests)."""
    deadline = time.monotonic() + 30
    while len(workers_that_served(server, "/healthz")) < workers:
        assert time.monotonic() < deadline, server.log()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda _: urllib.request.urlopen(f"{server.url}/healthz", timeout=10)
                          .read(), range(8)))


@pytest.mark.slow
@pytest.mark.parametrize("limit", ["EGIS_RATE_LIMIT_KEY", "EGIS_RATE_LIMIT_IP"])
def test_two_workers_share_one_count_through_redis(start_server, app, std_site, redis_prefix,
                                                   limit):
    """Per client IP too: both workers name the client by the one secret in the database."""
    server = start_server(workers=2, env={
        "EGIS_RATELIMIT_STORAGE_URI": REDIS_URL, "EGIS_RATELIMIT_KEY_PREFIX": redis_prefix,
        limit: "5/minute"})
    wait_for_workers(server, 2)
    statuses = post_concurrently(server.url, std_site, 24)
    deadline = time.monotonic() + 30
    # Which worker accepts a connection is the kernel's (or granian's) call: more posts, which
    # can only be refused, until both have counted some.
    while len(workers_that_served(server, "/api/events")) < 2:
        assert time.monotonic() < deadline, statuses
        statuses += post_concurrently(server.url, std_site, 8)
    refused = len(statuses) - 5
    assert statuses.count(200) == 5 and statuses.count(429) == refused, statuses
    assert stored_counts(app)["events"] == 5
    assert wait_for_tallies(app, {"rejected_429": refused}) == {"rejected_429": refused}


@pytest.mark.slow
def test_memory_storage_counts_per_worker(start_server, app, std_site):
    """The contrast: `memory://` keeps one count per worker, so 2 workers let 2N through."""
    server = start_server(workers=2, env={"EGIS_RATE_LIMIT_KEY": "5/hour"})
    statuses: list[int] = []
    deadline = time.monotonic() + 30
    # A worker still importing the app takes no requests: post until both have counted theirs.
    while statuses.count(200) < 10 and time.monotonic() < deadline:
        statuses += post_concurrently(server.url, std_site, 20)
    statuses += post_concurrently(server.url, std_site, 20)
    assert statuses.count(200) == 10, statuses
    assert stored_counts(app)["events"] == 10


@pytest.mark.slow
def test_without_redis_ingest_goes_on_and_readyz_says_the_limit_store_is_down(
        start_server, app, std_site, own_redis):
    server = start_server(workers=2, env={"EGIS_RATELIMIT_STORAGE_URI": own_redis.url,
                                            "EGIS_RATE_LIMIT_KEY": "2/minute"})
    assert post_concurrently(server.url, std_site, 3, threads=1) == [200, 200, 429]
    assert readyz(server.url) == (200, {"status": "ready", "database": "up",
                                        "rateLimitStore": "up"})

    own_redis.stop()
    assert post_concurrently(server.url, std_site, 12) == [200] * 12  # fail open
    assert stored_counts(app)["events"] == 2 + 12
    assert readyz(server.url) == (200, {"status": "ready", "database": "up",
                                        "rateLimitStore": "down"})
    assert "rate limit store unavailable (ConnectionError)" in server.log()

    own_redis.start()  # empty: the counts start again
    assert poll(lambda: readyz(server.url)[1]["rateLimitStore"] == "up")
    # Each worker says so at its first request after the outage; the posts reach both in time.
    assert poll(lambda: _post(server.url, dumps(batch()), std_site.write_headers()) == 429
                and "rate limit store is back" in server.log())
    assert "Traceback" not in server.log()


def test_a_store_outage_is_logged_once_and_retried_after_a_pause(make_app, std_site, caplog,
                                                                 own_redis, monkeypatch):
    monkeypatch.setattr(StoreHealth, "RETRY_SECONDS", 600)
    app = make_app(RATELIMIT_STORAGE_URI=own_redis.url, RATE_LIMIT_KEY="100/minute")
    client = app.test_client()
    assert events(client, std_site).status_code == 200
    own_redis.stop()
    with caplog.at_level(logging.WARNING, logger="app.web.limits"):
        for _ in range(5):
            assert events(client, std_site).status_code == 200
    outages = [r for r in caplog.records if "rate limit store unavailable" in r.getMessage()]
    assert len(outages) == 1
    assert store_health.down and not store_health.worth_trying()  # skipped, not waited on

