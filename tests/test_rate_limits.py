"""flask-limiter on the tracking endpoints: per key, per client IP, /api/validate, storage."""
import uuid

import pytest
import redis

from app import keys
from models.api_key import WRITE
from tests.tracking.helpers import (
    assert_json_error,
    batch,
    db,
    dumps,
    goal,
    post_json,
    post_live,
    stored_counts,
    tallies,
)

REDIS_URL = "redis://127.0.0.1:6379"


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


def test_validate_has_its_own_stricter_limit(make_app, std_site):
    client = make_app(RATE_LIMIT_VALIDATE="2/minute", RATE_LIMIT_IP="3/minute").test_client()
    for _ in range(2):
        assert client.get("/api/validate", headers=std_site.write_headers()).status_code == 200
    response = client.get("/api/validate", headers=std_site.write_headers())
    assert_limited(response)
    for _ in range(3):  # the tracking endpoints' per-IP budget is untouched
        assert events(client, std_site).status_code == 200
    assert_limited(events(client, std_site))


def test_validate_limit_counts_bad_keys_too(make_app):
    client = make_app(RATE_LIMIT_VALIDATE="2/minute").test_client()
    for _ in range(2):
        assert client.get("/api/validate", headers={"X-API-Key": "egis_x"}).status_code == 401
    assert_limited(client.get("/api/validate", headers={"X-API-Key": "egis_x"}))


# --- Redis storage --------------------------------------------------------------------------

@pytest.fixture
def redis_prefix():
    prefix = f"egis-test-{uuid.uuid4().hex}"
    connection = redis.Redis.from_url(REDIS_URL)
    yield prefix
    for key in connection.scan_iter(f"*{prefix}*"):
        connection.delete(key)
    connection.close()


def test_redis_storage(make_app, std_site, redis_prefix):
    app = make_app(RATELIMIT_STORAGE_URI=REDIS_URL, RATELIMIT_KEY_PREFIX=redis_prefix,
                   RATE_LIMIT_KEY="2/minute")
    client = app.test_client()
    assert events(client, std_site).status_code == 200
    assert events(client, std_site).status_code == 200
    assert_limited(events(client, std_site))
    stored = list(redis.Redis.from_url(REDIS_URL).scan_iter(f"*{redis_prefix}*"))
    assert stored, "the counters live in Redis"


def _post(url: str, body: bytes, headers: dict[str, str]) -> int:
    status, response_headers, payload = post_live(url, body, headers, timeout=10)
    if status == 429:
        assert int(response_headers["Retry-After"]) > 0 and "error" in payload
    return status


@pytest.mark.slow
def test_workers_share_one_count_through_redis(start_gunicorn, app, std_site, redis_prefix):
    server = start_gunicorn(workers=3, env={
        "EGIS_RATELIMIT_STORAGE_URI": REDIS_URL, "EGIS_RATELIMIT_KEY_PREFIX": redis_prefix,
        "EGIS_RATE_LIMIT_KEY": "5/minute"})
    statuses = [_post(server.url, dumps(batch()), std_site.write_headers()) for _ in range(12)]
    assert statuses.count(200) == 5 and statuses.count(429) == 7, statuses
    assert stored_counts(app)["events"] == 5
    assert tallies(app) == {"rejected_429": 7}
