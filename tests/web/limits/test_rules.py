"""The named limits and their decorator (app.web.limits.rules) on the tracking endpoints: per
key, per client IP, /api/validate, unknown keys."""
from app.access import keys
from models.api_key import WRITE
from tests.fixtures.limits import UNKNOWN_KEY, assert_limited, events
from tests.fixtures.tracking import (
    assert_json_error,
    batch,
    db,
    goal,
    post_json,
    stored_counts,
    tallies,
)


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
