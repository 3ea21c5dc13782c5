"""What registration (app/oauth/registration.py) lets one client, or all of them, store: the
attack of 231 registrations of ~40 KB each from one address in 10 s replayed against the hourly
cap per address (storage counted in rows and bytes); the daily cap in all, held by two live
servers on one database whose limit stores are their own (each worker's memory), registering
at the same moment; and when a 429 says to come back (a test clock). The redirect URI and name
rules: tests/oauth/test_register.py; the prune a day after: tests/oauth/test_expiry.py.
"""
import httpx2
import orjson
import pytest

from models import OAuthClient
from tests.fixtures.helpers import db, race
from tests.fixtures.oauth import Clock
from tests.fixtures.servers import IN_REQUEST

# The largest registration allowed, padded with members egis does not keep to the attack's size.
URIS = [f"https://client.example/{index}/" + "x" * (1000 - 25) for index in range(10)]
LARGEST = {"redirect_uris": URIS, "client_name": "n" * 200, "logo_uri": "https://l/" + "x" * 9000,
           "client_uri": "https://c/" + "x" * 9000, "tos_uri": "https://t/" + "x" * 9000,
           "policy_uri": "https://p/" + "x" * 9000, "contacts": ["a@example.com"] * 50}
ROW_BYTES = 11_000  # what one such registration may keep, at most


def stored_bytes(app) -> tuple[int, int]:
    """The registered clients: how many, and the bytes of all they keep."""
    with db(app):
        rows = list(OAuthClient.select())
    return len(rows), sum(len(row.client_id) + len((row.client_name or "").encode())
                          + sum(len(orjson.dumps(value)) for value in (
                              row.redirect_uris, row.grant_types, row.metadata))
                          for row in rows)


def test_231_registrations_of_40_kb_from_one_address_meet_the_hourly_cap(app, client):
    body = orjson.dumps(LARGEST)
    assert 40_000 < len(body) < 50_000 and all(len(uri) == 1000 for uri in URIS)
    answers = [client.post("/oauth/register", data=body, content_type="application/json")
               for _ in range(231)]
    assert [answer.status_code for answer in answers] == [201] * 20 + [429] * 211
    refused = answers[20]  # (past 120 in a minute, EGIS_RATE_LIMIT_OAUTH answers first)
    seconds = int(refused.headers["Retry-After"])
    assert 1 <= seconds <= 3600 and refused.headers["Access-Control-Allow-Origin"] == "*"
    assert refused.headers["Access-Control-Expose-Headers"] == "Retry-After"
    said = refused.get_json()
    assert said["error"].startswith("Rate limit exceeded (20 per 1 hour)")
    assert said["error_description"].startswith(
        "Too many registrations came from your address: try again after ")
    rows, size = stored_bytes(app)
    assert rows == 20 and size <= 20 * ROW_BYTES  # 10-11 KB each, not 40 KB: nothing ignored
    # Another address registers meanwhile.
    other = client.post("/oauth/register", data=body, content_type="application/json",
                        environ_base={"REMOTE_ADDR": "203.0.113.9"})
    assert other.status_code == 201


@pytest.mark.slow
def test_the_daily_cap_holds_in_all_across_servers_registering_at_once(start_server):
    """Two live servers on one database, each limit store its own worker's memory: only a
    count in the database holds the cap for both."""
    env = {"EGIS_OAUTH_REGISTRATIONS_PER_DAY": "6", "EGIS_RATE_LIMIT_OAUTH_REGISTER": "100/hour",
           **IN_REQUEST}
    servers = [start_server(1, env=env, deploy_config=True) for _ in range(2)]
    body = {"redirect_uris": ["http://127.0.0.1:1/callback"], "client_name": "At once"}

    def register(index: int) -> tuple[int, int, dict]:
        with httpx2.Client(base_url=servers[index % 2].url, timeout=20) as http:
            answer = http.post("/oauth/register", json=body)
        return index % 2, answer.status_code, answer.json() | {
            "retry_after": answer.headers.get("Retry-After")}

    answers = race(16, register)
    accepted = [server for server, status, _ in answers if status == 201]
    refused = [said for _, status, said in answers if status == 429]
    assert len(accepted) == 6 and len(refused) == 10
    assert all(said["error"].startswith("Registration limit reached (6 in 24 hours")
               and "egis has taken the 6 registrations" in said["error_description"]
               and 86_000 < int(said["retry_after"]) <= 86_401 for said in refused)
    # The next one too, from either server.
    for server in servers:
        with httpx2.Client(base_url=server.url, timeout=20) as http:
            assert http.post("/oauth/register", json=body).status_code == 429


def test_the_daily_cap_says_when_a_registration_frees(make_app, monkeypatch):
    clock = Clock(monkeypatch)
    app = make_app(OAUTH_REGISTRATIONS_PER_DAY=3)
    client = app.test_client()
    body = {"redirect_uris": ["http://127.0.0.1:1/callback"]}
    for _ in range(3):
        assert client.post("/oauth/register", json=body).status_code == 201
        clock.advance(hours=1)
    refused = client.post("/oauth/register", json=body)
    # The first of the three turns 24 hours old 21 hours from now.
    assert refused.status_code == 429
    assert 21 * 3600 <= int(refused.headers["Retry-After"]) <= 21 * 3600 + 1
    assert "(in 21 hours and 0 minutes)" in refused.get_json()["error_description"]
    clock.advance(hours=21, seconds=1)
    assert client.post("/oauth/register", json=body).status_code == 201
    assert client.post("/oauth/register", json=body).status_code == 429


@pytest.mark.parametrize("cap", [0, 1])
def test_a_cap_of_zero_registers_none(make_app, cap):
    client = make_app(OAUTH_REGISTRATIONS_PER_DAY=cap).test_client()
    body = {"redirect_uris": ["http://127.0.0.1:1/callback"]}
    assert [client.post("/oauth/register", json=body).status_code for _ in range(2)] == (
        [201, 429] if cap else [429, 429])
