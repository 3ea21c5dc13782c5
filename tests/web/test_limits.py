"""flask-limiter on the tracking endpoints: per key, per client IP, /api/validate, storage."""
import hashlib
import json
import logging
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import redis

from app import keys
from app.limits import StoreHealth, store_health
from models.api_key import WRITE
from models.instance_secret import InstanceSecret
from tests.fixtures.database import REDIS_URL
from tests.fixtures.servers import free_port
from tests.fixtures.tracking import (
    assert_json_error,
    batch,
    db,
    dumps,
    goal,
    post_json,
    post_live,
    stored_counts,
    tallies,
    wait_for_tallies,
)

UNKNOWN_KEY = "Invalid API key: unknown or revoked."


def events(client, site, **headers):
    return post_json(client, "/api/events", batch(), site.write_headers(**headers))


def assert_limited(response) -> None:
    body = assert_json_error(response, 429)
    assert body["error"].startswith("Rate limit exceeded (")
    assert body["error"].endswith("); retry after the Retry-After delay.")
    assert int(response.headers["Retry-After"]) > 0


def test_per_key_limit(make_app, std_site):
    app = make_app(RATE_LIMIT_KEY="3/minute")
    client = app.test_client()
    for _ in range(3):
        assert events(client, std_site).status_code == 200
    response = events(client, std_site)
    assert_limited(response)
    assert response.get_json()["error"] == (
        "Rate limit exceeded (3 per 1 minute); retry after the Retry-After delay.")
    assert stored_counts(app)["events"] == 3
    assert tallies(app) == {"rejected_429": 1}


def test_limits_switched_off_in_one_app_stay_on_in_the_next(make_app, std_site):
    assert events(make_app(RATELIMIT_ENABLED=False).test_client(), std_site).status_code == 200
    client = make_app(RATE_LIMIT_KEY="1/minute").test_client()
    assert events(client, std_site).status_code == 200
    assert_limited(events(client, std_site))


def test_the_per_key_budget_is_shared_by_events_and_goals(make_app, std_site):
    client = make_app(RATE_LIMIT_KEY="3/minute").test_client()
    assert events(client, std_site).status_code == 200
    assert post_json(client, "/api/goals", goal(), std_site.write_headers()).status_code == 200
    assert events(client, std_site).status_code == 200
    assert_limited(post_json(client, "/api/goals", goal(), std_site.write_headers()))
    assert_limited(events(client, std_site))


def test_another_key_has_its_own_budget(make_app, std_site, free_site):
    client = make_app(RATE_LIMIT_KEY="2/minute").test_client()
    for _ in range(2):
        assert events(client, std_site).status_code == 200
    assert_limited(events(client, std_site))
    assert events(client, free_site).status_code == 200  # same IP, another key


def test_two_keys_of_one_site_are_counted_apart(make_app, app, std_site):
    client = make_app(RATE_LIMIT_KEY="1/minute").test_client()
    with db(app):
        second = keys.issue(std_site.site, WRITE, "egis_").key
    assert events(client, std_site).status_code == 200
    assert_limited(events(client, std_site))
    assert post_json(client, "/api/events", batch(), {"X-API-Key": second}).status_code == 200


def test_per_ip_limit_spans_keys(make_app, std_site, free_site):
    app = make_app(RATE_LIMIT_IP="3/minute")
    client = app.test_client()
    assert events(client, std_site).status_code == 200
    assert events(client, free_site).status_code == 200
    assert post_json(client, "/api/goals", goal(), std_site.write_headers()).status_code == 200
    assert_limited(events(client, free_site))
    assert tallies(app, free_site.site.id) == {"rejected_429": 1}


def test_a_limited_browser_can_read_the_429(make_app, std_site):
    client = make_app(RATE_LIMIT_KEY="1/minute").test_client()
    events(client, std_site, Origin="https://std.example")
    response = events(client, std_site, Origin="https://std.example")
    assert_limited(response)
    assert response.headers["Access-Control-Allow-Origin"] == "https://std.example"
    assert "Retry-After" in response.headers["Access-Control-Expose-Headers"]


def test_refused_origins_and_bad_keys_do_not_spend_the_key_budget(make_app, std_site):
    client = make_app(RATE_LIMIT_KEY="2/minute").test_client()
    for _ in range(3):
        assert events(client, std_site, Origin="https://evil.example").status_code == 403
        assert post_json(client, "/api/events", batch(), {"X-API-Key": "egis_x"}).status_code \
            == 401
    assert events(client, std_site).status_code == 200


@pytest.mark.parametrize(("trusted", "separate"), [(1, True), (0, False)])
def test_client_ip_through_proxy_fix(make_app, std_site, free_site, trusted, separate):
    client = make_app(TRUSTED_PROXIES=trusted, RATE_LIMIT_IP="2/minute").test_client()

    def send(site, forwarded_for):
        return events(client, site, **{"X-Forwarded-For": forwarded_for})

    assert send(std_site, "203.0.113.1").status_code == 200
    assert send(free_site, "203.0.113.1").status_code == 200
    assert send(std_site, "203.0.113.2").status_code == (200 if separate else 429)
    assert send(free_site, "203.0.113.1").status_code == 429
    if separate:  # only the last hop is trusted: a spoofed first hop changes nothing
        assert send(std_site, "198.51.100.7, 203.0.113.1").status_code == 429


@pytest.mark.parametrize(("first", "second", "shared"), [
    ("2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:fffe", True),  # one /64
    ("2001:db8:1:2::1", "2001:db8:1:3::1", False),  # the next /64
    ("203.0.113.1", "::ffff:203.0.113.1", True),  # IPv4 through a dual-stack socket
    ("203.0.113.1", "203.0.113.2", False),
    ("no:such:address", "no:such:address", True),  # a garbled header, counted as given
])
def test_an_ipv6_client_is_counted_per_64_network(make_app, std_site, first, second, shared):
    client = make_app(TRUSTED_PROXIES=1, RATE_LIMIT_IP="2/minute").test_client()

    def send(forwarded_for):
        return events(client, std_site, **{"X-Forwarded-For": forwarded_for})

    for _ in range(2):
        assert send(first).status_code == 200
    assert_limited(send(first))
    if shared:
        assert_limited(send(second))
    else:
        assert send(second).status_code == 200


def test_validate_has_its_own_stricter_limit(make_app, std_site):
    client = make_app(RATE_LIMIT_VALIDATE="2/minute", RATE_LIMIT_IP="3/minute").test_client()
    for _ in range(2):
        assert client.get("/api/validate", headers=std_site.write_headers()).status_code == 200
    response = client.get("/api/validate", headers=std_site.write_headers())
    assert_limited(response)
    for _ in range(3):  # the tracking endpoints' per-IP budget is untouched
        assert events(client, std_site).status_code == 200
    assert_limited(events(client, std_site))


def test_a_wrong_key_sent_again_and_again_stays_401_so_the_tracker_stops(make_app, app):
    """A site deployed with a wrong key, its visitors behind one address: the worker looks the key
    up once and answers every request 401 from its cache, without spending the budget (a 429
    would have every tracker retry). New unknown keys still spend it."""
    client = make_app(RATE_LIMIT_BAD_KEY="2/minute").test_client()
    for _ in range(5):
        response = post_json(client, "/api/events", batch(), {"X-API-Key": "egis_wrong"})
        assert assert_json_error(response, 401)["error"] == UNKNOWN_KEY
    response = post_json(client, "/api/events", batch(), {"X-API-Key": "egis_other"})
    assert assert_json_error(response, 401)["error"] == UNKNOWN_KEY  # the second lookup
    assert_limited(post_json(client, "/api/events", batch(), {"X-API-Key": "egis_third"}))
    response = post_json(client, "/api/events", batch(), {"X-API-Key": "egis_wrong"})
    assert assert_json_error(response, 401)["error"] == UNKNOWN_KEY
    assert tallies(app) == {}


def test_validate_limit_counts_bad_keys_too(make_app):
    client = make_app(RATE_LIMIT_VALIDATE="2/minute").test_client()
    for _ in range(2):
        assert client.get("/api/validate", headers={"X-API-Key": "egis_x"}).status_code == 401
    assert_limited(client.get("/api/validate", headers={"X-API-Key": "egis_x"}))


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


def test_a_shared_store_holds_no_client_address(make_app, std_site, own_redis):
    """In Redis a client is counted under a keyed hash of its address, the key a secret kept in
    the database: a snapshot or a listing of the store shows no address, and the budgets hold."""
    app = make_app(RATELIMIT_STORAGE_URI=own_redis.url, TRUSTED_PROXIES=1,
                   RATE_LIMIT_IP="2/minute", RATE_LIMIT_VALIDATE="1/minute")
    client = app.test_client()

    def validate(forwarded_for):
        return client.get("/api/validate",
                          headers=std_site.write_headers(**{"X-Forwarded-For": forwarded_for}))

    for address in ("2001:db8:7:7::1", "2001:db8:7:7::2"):
        assert events(client, std_site, **{"X-Forwarded-For": address}).status_code == 200
    assert_limited(events(client, std_site, **{"X-Forwarded-For": "2001:db8:7:7::3"}))
    assert events(client, std_site, **{"X-Forwarded-For": "198.51.100.9"}).status_code == 200
    assert validate("198.51.100.9").status_code == 200
    assert_limited(validate("198.51.100.9"))

    keys = list(redis.Redis.from_url(own_redis.url, decode_responses=True).scan_iter())
    assert not [key for key in keys if "2001" in key or "198.51" in key], keys
    with db(app):
        secret = InstanceSecret.named("limits")
    for network, counters in (("2001:db8:7:7::/64", 1), ("198.51.100.9", 2)):  # per-ip, validate
        pseudonym = hashlib.blake2b(network.encode(), key=secret, digest_size=16).hexdigest()
        assert len([key for key in keys if f"/{pseudonym}/" in key]) == counters, keys


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


# --- the limit store goes away ---------------------------------------------------------------

class RedisServer:
    """A redis-server of the test's own on a free port (the machine's shared one is never
    stopped); stopped by PID."""

    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.directory = directory
        self.url = f"redis://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.directory)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if client.ping():
                    return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()


def readyz(url: str) -> tuple[int, dict]:
    with urllib.request.urlopen(f"{url}/readyz", timeout=10) as response:
        return response.status, json.loads(response.read())


def poll(condition, attempts: int = 100, pause: float = 0.1) -> bool:
    for _ in range(attempts):
        if condition():
            return True
        time.sleep(pause)
    return False


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
    with caplog.at_level(logging.WARNING, logger="app.limits"):
        for _ in range(5):
            assert events(client, std_site).status_code == 200
    outages = [r for r in caplog.records if "rate limit store unavailable" in r.getMessage()]
    assert len(outages) == 1
    assert store_health.down and not store_health.worth_trying()  # skipped, not waited on


def test_unknown_keys_per_ip_limit_refuses_before_the_database_is_asked(make_app, app,
                                                                          std_site, free_site):
    limited_app = make_app(RATE_LIMIT_BAD_KEY="3/minute")
    client = limited_app.test_client()
    assert events(client, std_site).status_code == 200  # this key is now in the worker's cache
    for number in range(3):
        response = post_json(client, "/api/events", batch(), {"X-API-Key": f"egis_unknown{number}"})
        assert assert_json_error(response, 401)["error"] == UNKNOWN_KEY
    response = post_json(client, "/api/events", batch(), {"X-API-Key": "egis_unknown3"})
    assert_limited(response)
    assert response.get_json()["error"] == (
        "Rate limit exceeded (3 per 1 minute); retry after the Retry-After delay.")
    # A key the worker has not looked up yet is refused too, valid or not: no query is made.
    assert_limited(events(client, free_site))
    assert events(client, std_site).status_code == 200  # a known key still works
    response = post_json(client, "/api/events", batch(), {"X-API-Key": "egis_unknown0"})
    assert assert_json_error(response, 401)["error"] == UNKNOWN_KEY  # known to be unknown
    other_client = limited_app.test_client()
    other_client.environ_base["REMOTE_ADDR"] = "203.0.113.9"
    response = post_json(other_client, "/api/events", batch(), {"X-API-Key": "egis_unknown4"})
    assert assert_json_error(response, 401)["error"] == UNKNOWN_KEY  # another client's budget
    assert tallies(app) == {}  # no site to count them against


def test_unknown_keys_are_counted_on_every_endpoint_and_missing_ones_are_not(make_app):
    client = make_app(RATE_LIMIT_BAD_KEY="2/minute").test_client()
    for _ in range(3):
        assert_json_error(post_json(client, "/api/events", batch()), 401)  # no key at all
        # Not one of ours by its prefix: refused without a lookup, so not counted.
        response = client.get("/api/validate", headers={"X-API-Key": "not-a-key-of-ours"})
        assert assert_json_error(response, 401)["error"] == UNKNOWN_KEY
    response = post_json(client, "/api/server/events", {}, {"Authorization": "Bearer egiss_x"})
    assert assert_json_error(response, 401)["error"] == UNKNOWN_KEY
    response = client.get("/api/validate", headers={"X-API-Key": "egis_unknown"})
    assert assert_json_error(response, 401)["error"] == UNKNOWN_KEY
    assert_limited(client.get("/api/validate", headers={"X-API-Key": "egis_unknown2"}))
