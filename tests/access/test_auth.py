"""The shared key decorator, as a matrix over every authenticated route.

A new endpoint joins the matrix by adding one `AuthRoute` to ROUTES: which key kinds it takes,
whether it reads X-API-Key, a request that passes validation, and the status it answers then.
"""
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from flask import Blueprint, g

from app.access.auth import require_key
from app.access.keys import revoke
from models import database
from models.api_key import READ, SERVER, WRITE


@dataclass(frozen=True)
class AuthRoute:
    method: str
    path: str
    kinds: tuple[str, ...]  # key kinds the route accepts
    ok_status: int = 200
    body: Any = None  # a valid JSON body, for routes that take one
    headers: dict[str, str] = field(default_factory=dict)  # extra headers a valid call needs

    @property
    def reads_x_api_key(self) -> bool:
        return WRITE in self.kinds  # X-API-Key only on the write-key endpoints

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


NOW_MS = 1_780_000_000_000
BATCH = {"id": "auth-matrix-1", "sessionId": "s1", "anonymousId": "a1", "timestamp": NOW_MS,
         "events": [{"type": "pageview", "timestamp": NOW_MS, "pageUrl": "https://std.example/"}]}

ROUTES = [
    AuthRoute("GET", "/api/validate", (WRITE, SERVER, READ)),
    AuthRoute("POST", "/api/events", (WRITE,), body=BATCH),
    AuthRoute("POST", "/api/goals", (WRITE,), body={"goal_name": "signup"}),
    AuthRoute("POST", "/api/server/events", (SERVER,), body={"eventName": "signup"}),
    AuthRoute("POST", "/api/crawl/report", (SERVER,), ok_status=204,
              body={"path": "/pricing", "userAgent": "Mozilla/5.0 (compatible; GPTBot/1.2)"}),
    AuthRoute("POST", "/api/mcp", (SERVER, READ),
              body={"jsonrpc": "2.0", "id": 1, "method": "ping"}),
]

UNKNOWN_WRITE = "egis_" + "A" * 43
UNKNOWN_SERVER = "egiss_" + "A" * 43
UNKNOWN_READ = "egisr_" + "A" * 43


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


# Each case: (name, how to build headers from the site's keys, which kind it presents, or the
# fixed status when the outcome does not depend on the route's kinds).
@dataclass(frozen=True)
class Case:
    name: str
    headers: Callable[[Any], dict[str, str]]
    presents: str | None = None  # kind of a valid key presented, if any
    header_form: str = "bearer"  # "bearer" or "x-api-key"
    revoke_first: bool = False


CASES = [
    Case("write-bearer", lambda s: _bearer(s.write_key), WRITE),
    Case("write-bearer-lowercase", lambda s: {"Authorization": f"bearer {s.write_key}"}, WRITE),
    Case("write-bearer-uppercase", lambda s: {"Authorization": f"BEARER {s.write_key}"}, WRITE),
    Case("write-bearer-padded", lambda s: {"Authorization": f"Bearer   {s.write_key}  "}, WRITE),
    Case("write-x-api-key", lambda s: {"X-API-Key": s.write_key}, WRITE, "x-api-key"),
    Case("server-bearer", lambda s: _bearer(s.server_key), SERVER),
    Case("read-bearer", lambda s: _bearer(s.read_key), READ),
    Case("read-x-api-key", lambda s: {"X-API-Key": s.read_key}, READ, "x-api-key"),
    Case("missing", lambda s: {}),
    Case("empty-x-api-key", lambda s: {"X-API-Key": ""}),
    Case("unknown-write", lambda s: _bearer(UNKNOWN_WRITE)),
    Case("unknown-server", lambda s: _bearer(UNKNOWN_SERVER)),
    Case("unknown-read", lambda s: _bearer(UNKNOWN_READ)),
    Case("unknown-x-api-key", lambda s: {"X-API-Key": UNKNOWN_WRITE}),
    Case("no-prefix", lambda s: _bearer(s.write_key.removeprefix("egis_"))),
    Case("other-prefix", lambda s: _bearer("sk_live_" + s.write_key.removeprefix("egis_"))),
    Case("truncated", lambda s: _bearer(s.write_key[:-1])),
    Case("bearer-without-token", lambda s: {"Authorization": "Bearer"}),
    Case("bearer-blank-token", lambda s: {"Authorization": "Bearer    "}),
    Case("no-scheme", lambda s: {"Authorization": s.write_key}),
    Case("basic-scheme", lambda s: {"Authorization": f"Basic {s.write_key}"}),
    Case("token-scheme", lambda s: {"Authorization": f"Token {s.write_key}"}),
    Case("revoked-write-bearer", lambda s: _bearer(s.write_key), revoke_first=True),
    Case("revoked-write-x-api-key", lambda s: {"X-API-Key": s.write_key}, header_form="x-api-key",
         revoke_first=True),
    Case("revoked-server-bearer", lambda s: _bearer(s.server_key), revoke_first=True),
    Case("revoked-read-bearer", lambda s: _bearer(s.read_key), revoke_first=True),
]


# Cases in which no key is presented at all (as opposed to an unknown one).
MISSING = {"missing", "empty-x-api-key", "bearer-without-token", "bearer-blank-token",
           "no-scheme", "basic-scheme", "token-scheme"}


WRONG_HEADER = ("This endpoint does not read X-API-Key: send the server key as "
                "Authorization: Bearer <key>.")


def expected_status(route: AuthRoute, case: Case) -> int:
    if case.presents is None:
        return 401  # missing, malformed, unknown or revoked
    if case.header_form == "x-api-key" and not route.reads_x_api_key:
        return 401  # the header is not read there: no key was presented
    if case.presents not in route.kinds:
        return 403
    return route.ok_status


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_auth_matrix(app, std_site, route: AuthRoute, case: Case):
    headers = case.headers(std_site)
    if case.revoke_first:
        with app.app_context(), database.connection_context():
            revoke({"write": std_site.write_key, "server": std_site.server_key,
                    "read": std_site.read_key}[case.name.split("-")[1]])
    response = app.test_client().open(route.path, method=route.method, json=route.body,
                                      headers={**route.headers, **headers})
    assert response.status_code == expected_status(route, case), response.get_data(True)
    if response.status_code == 204:
        assert response.get_data() == b""
        return
    assert response.mimetype == "application/json"
    body = response.get_json()
    if response.status_code in (401, 403):
        assert isinstance(body["error"], str) and body["error"]
        assert set(body) <= {"error", "valid"}
    if response.status_code == 401:
        only_x_api_key = "X-API-Key" in headers and "Authorization" not in headers
        if only_x_api_key and headers["X-API-Key"] and not route.reads_x_api_key:
            wording = WRONG_HEADER
        else:
            wording = "Missing API key" if case.name in MISSING else "Invalid API key"
        assert body["error"].startswith(wording), body


def test_validate_with_a_server_key_is_valid_but_cannot_track(client, std_site):
    response = client.get("/api/validate", headers=std_site.server_headers())
    assert response.status_code == 200
    body = response.get_json()
    assert (body["valid"], body["canTrack"]) == (True, False)


def test_validate_with_a_read_key_is_valid_but_cannot_track(client, std_site):
    response = client.get("/api/validate", headers=_bearer(std_site.read_key))
    assert response.status_code == 200
    body = response.get_json()
    assert (body["valid"], body["canTrack"]) == (True, False)


def test_a_read_key_is_for_the_agent_endpoint_only(client, std_site):
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert client.post("/api/mcp", json=ping, headers=_bearer(std_site.read_key)).status_code == 200
    refused = client.post("/api/events", json=BATCH, headers=_bearer(std_site.read_key))
    assert refused.status_code == 403
    assert refused.get_json()["error"] == ("This endpoint takes a write (tracking) key; a read key "
                                           "was given.")
    write_on_mcp = client.post("/api/mcp", json=ping, headers=_bearer(std_site.write_key))
    assert write_on_mcp.get_json()["error"] == ("This endpoint takes a server key or a read key; "
                                                "a write (tracking) key was given.")


def test_validate_with_a_write_key_can_track(client, std_site):
    body = client.get("/api/validate", headers=std_site.write_headers()).get_json()
    assert (body["valid"], body["canTrack"]) == (True, True)


def test_validate_401_says_valid_false(client):
    for headers in ({}, _bearer(UNKNOWN_WRITE)):
        response = client.get("/api/validate", headers=headers)
        assert response.status_code == 401
        body = response.get_json()
        assert body["valid"] is False
        assert body["error"]


def test_key_of_another_prefix_configuration_is_unknown(make_app, std_site):
    app = make_app(KEY_PREFIX="acme")
    response = app.test_client().get("/api/validate", headers=std_site.write_headers())
    assert response.status_code == 401


# --- the decorator itself, on test-only routes (wrong kind -> 403, g.site and g.key) ---------

@pytest.fixture
def probe_app(make_app):
    app = make_app()
    bp = Blueprint("auth_probe", __name__)

    @bp.get("/_probe/server-only")
    @require_key(SERVER)
    def server_only():
        return {"site": g.site.domain, "kind": g.key.kind}

    @bp.get("/_probe/write-only")
    @require_key(WRITE)
    def write_only():
        return {"site": g.site.domain, "kind": g.key.kind}

    app.register_blueprint(bp)
    return app


def test_decorator_sets_g_site_and_g_key(probe_app, std_site):
    client = probe_app.test_client()
    assert client.get("/_probe/server-only", headers=std_site.server_headers()).get_json() == {
        "site": "std.example", "kind": SERVER}
    assert client.get("/_probe/write-only", headers=std_site.write_headers()).get_json() == {
        "site": "std.example", "kind": WRITE}


def test_wrong_kind_is_403_json(probe_app, std_site):
    client = probe_app.test_client()
    response = client.get("/_probe/server-only", headers=_bearer(std_site.write_key))
    assert response.status_code == 403
    assert response.get_json() == {
        "error": "This endpoint takes a server key; a write (tracking) key was given."}
    response = client.get("/_probe/write-only", headers=std_site.server_headers())
    assert response.status_code == 403
    assert "a server key was given" in response.get_json()["error"]


def test_server_only_route_does_not_read_x_api_key_and_says_which_header_it_reads(
        probe_app, std_site):
    response = probe_app.test_client().get(
        "/_probe/server-only", headers={"X-API-Key": std_site.server_key})
    assert response.status_code == 401
    assert response.get_json() == {"error": WRONG_HEADER}


@pytest.mark.parametrize("path", ["/api/server/events", "/api/crawl/report", "/api/mcp"])
def test_a_server_key_in_x_api_key_is_told_to_use_bearer(client, std_site, path):
    response = client.post(path, json={}, headers={"X-API-Key": std_site.server_key})
    assert response.status_code == 401
    assert response.get_json() == {"error": WRONG_HEADER}


def test_keys_of_one_site_never_authenticate_another(probe_app, make_site):
    a = make_site("a.example", "standard")
    b = make_site("b.example", "free")
    client = probe_app.test_client()
    assert client.get("/_probe/server-only", headers=a.server_headers()).get_json()["site"] == (
        "a.example")
    assert client.get("/_probe/server-only", headers=b.server_headers()).get_json()["site"] == (
        "b.example")


def test_unknown_keys_are_cached_and_valid_ones_too(make_app, std_site, monkeypatch):
    """The cache spares the database a lookup per request, for good and bad keys alike."""
    import app.access.keys as keys_module

    calls = []
    original = keys_module._load_active
    monkeypatch.setattr(keys_module, "_load_active",
                        lambda digest: calls.append(digest) or original(digest))
    client = make_app().test_client()
    for _ in range(3):
        assert client.get("/api/validate", headers=std_site.write_headers()).status_code == 200
        assert client.get("/api/validate", headers=_bearer(UNKNOWN_WRITE)).status_code == 401
    assert len(calls) == 2
    # A key without a known prefix never reaches the database at all.
    assert client.get("/api/validate", headers=_bearer("nope")).status_code == 401
    assert len(calls) == 2
