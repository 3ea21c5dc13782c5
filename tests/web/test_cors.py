"""CORS on the write-key endpoints, and the Origin check that goes with it."""
import pytest

from tests.fixtures.tracking import (
    NOTHING,
    assert_json_error,
    batch,
    goal,
    post_json,
    stored_counts,
    tallies,
)

BODIES = {"/api/events": lambda: batch(), "/api/goals": goal}
REQUESTED_HEADERS = "x-api-key, authorization, content-type, content-encoding"


def preflight(client, path: str, origin: str = "https://std.example"):
    return client.options(path, headers={
        "Origin": origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": REQUESTED_HEADERS})


@pytest.mark.parametrize("path", [*BODIES])
def test_preflight_is_answered(client, app, path):
    response = preflight(client, path)
    assert response.status_code in (200, 204)
    assert response.headers["Access-Control-Allow-Origin"] == "https://std.example"
    assert "POST" in response.headers["Access-Control-Allow-Methods"]
    allowed = response.headers["Access-Control-Allow-Headers"].lower().replace(" ", "").split(",")
    assert {"x-api-key", "authorization", "content-type", "content-encoding"} <= set(allowed)
    assert int(response.headers["Access-Control-Max-Age"]) > 0
    assert "Origin" in response.headers.get("Vary", "")
    assert stored_counts(app) == NOTHING


@pytest.mark.parametrize("path", [*BODIES])
def test_preflight_needs_no_key_and_no_known_origin(client, path):
    """A preflight carries no key, so it cannot be tied to a site: the real request is checked."""
    response = preflight(client, path, "https://anything.example")
    assert response.status_code in (200, 204)
    assert response.headers["Access-Control-Allow-Origin"] == "https://anything.example"


ALLOWED = ["https://std.example", "https://www.std.example:8080", "http://std.example",
           "http://WWW.STD.EXAMPLE", "https://a.b.std.example"]
REFUSED = ["https://notstd.example", "https://std.example.evil.com", "null",
           "https://evilstd.example", "https://std.example@evil.example", "https://example",
           "not a url", "https://[::1", ""]


@pytest.mark.parametrize("path", [*BODIES])
@pytest.mark.parametrize("origin", ALLOWED)
def test_the_sites_origins_are_allowed(client, app, std_site, path, origin):
    response = post_json(client, path, BODIES[path](), std_site.write_headers(Origin=origin))
    assert response.status_code == 200, response.get_json()
    assert response.headers["Access-Control-Allow-Origin"] == origin
    assert "Origin" in response.headers["Vary"]
    assert "Retry-After" in response.headers["Access-Control-Expose-Headers"]
    assert stored_counts(app)["events"] == 1


@pytest.mark.parametrize("path", [*BODIES])
@pytest.mark.parametrize("origin", REFUSED)
def test_a_foreign_origin_is_refused(client, app, std_site, path, origin):
    response = post_json(client, path, BODIES[path](), std_site.write_headers(Origin=origin))
    body = assert_json_error(response, 403)
    assert body["error"] == (f"Origin {origin!r} is not allowed: requests must come from "
                             "std.example or one of its subdomains.")
    # readable by the page (else the browser shows only "blocked by CORS policy")
    assert response.headers["Access-Control-Allow-Origin"] == origin
    assert "Origin" in response.headers["Vary"]
    assert "Access-Control-Expose-Headers" not in response.headers
    assert stored_counts(app) == NOTHING
    assert tallies(app) == {"rejected_403_origin": 1}


@pytest.mark.parametrize("kind", ["write", "server", "read"])
def test_a_foreign_origin_reads_only_the_refusal_from_validate(client, std_site, kind):
    key = getattr(std_site, f"{kind}_key")
    allowed = client.get("/api/validate", headers={"X-API-Key": key,
                                                   "Origin": "https://std.example"})
    assert allowed.status_code == 200 and "quota" in allowed.get_json()
    response = client.get("/api/validate", headers={"X-API-Key": key,
                                                    "Origin": "https://evil.example"})
    body = assert_json_error(response, 403, "is not allowed")
    assert response.headers["Access-Control-Allow-Origin"] == "https://evil.example"
    assert set(body) == {"error", "valid"} and body["valid"] is False


def test_the_origin_is_checked_before_the_body(client, app, std_site):
    response = post_json(client, "/api/events", b"not json",
                         std_site.write_headers(Origin="https://evil.example"))
    assert_json_error(response, 403, "is not allowed")


@pytest.mark.parametrize("path", [*BODIES])
def test_backends_without_origin_are_allowed_without_cors_headers(client, app, std_site, path):
    response = post_json(client, path, BODIES[path](), std_site.write_headers())
    assert response.status_code == 200
    assert "Access-Control-Allow-Origin" not in response.headers
    assert stored_counts(app)["events"] == 1


def test_another_sites_origin_with_this_key_is_refused(client, app, std_site, free_site):
    response = post_json(client, "/api/events", batch(),
                         std_site.write_headers(Origin="https://free.example"))
    assert_json_error(response, 403)
    assert tallies(app, std_site.site.id) == {"rejected_403_origin": 1}
    assert tallies(app, free_site.site.id) == {}


def test_errors_for_an_allowed_origin_are_readable_by_the_browser(client, app, std_site):
    for headers, status in (({"X-API-Key": "egis_unknown"}, 401),
                            (std_site.write_headers(), 400)):
        response = post_json(client, "/api/events", batch(events=[]),
                             {**headers, "Origin": "https://std.example"})
        assert response.status_code == status
        assert response.headers["Access-Control-Allow-Origin"] == "https://std.example"


def test_non_tracking_endpoints_send_no_cors_headers(client):
    for path in ("/healthz", "/api/openapi.json"):
        response = client.get(path, headers={"Origin": "https://std.example"})
        assert "Access-Control-Allow-Origin" not in response.headers


@pytest.mark.parametrize("path", ["/api/server/events", "/api/crawl/report"])
def test_server_key_endpoints_send_no_cors_headers(client, std_site, path):
    response = client.post(path, json={}, headers=std_site.server_headers(
        Origin="https://std.example"))
    assert response.status_code < 500
    assert "Access-Control-Allow-Origin" not in response.headers
    assert "Access-Control-Allow-Origin" not in preflight(client, path).headers


def test_validate_answers_cors_too(client, std_site):
    response = preflight(client, "/api/validate")
    assert response.headers.get("Access-Control-Allow-Origin") == "https://std.example"
    real = client.get("/api/validate", headers=std_site.write_headers(
        Origin="https://std.example"))
    assert real.headers.get("Access-Control-Allow-Origin") == "https://std.example"
