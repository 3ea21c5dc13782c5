"""How long each secret lives, by a test clock (app.oauth.grants reads the time through
`utcnow`): a code 10 minutes, an access token 1 hour, a refresh token 30 days unused (each
refresh issues a new one, so a grant in use never lapses). What is stored of them: digests.
"""

import pytest

from app.access.keys import hash_key
from models import OAuthCode, OAuthGrant, OAuthToken
from tests.fixtures.helpers import db
from tests.fixtures.oauth import Clock, connect_code, in_process


@pytest.fixture
def me(app, make_site):
    make_site("std.example", "standard")
    with in_process(app) as make:
        yield make().register()


def works_on_mcp(me, access_token: str) -> bool:
    return me.call(access_token, method="ping").status_code == 200


def test_a_code_lasts_10_minutes(app, me, monkeypatch):
    clock = Clock(monkeypatch)
    fresh = me.authorize(connect_code(app, "std.example"))["code"]
    stale = me.authorize(connect_code(app, "std.example"))["code"]
    clock.advance(minutes=9, seconds=59)
    assert me.exchange(fresh).status_code == 200
    clock.advance(seconds=2)
    expired = me.exchange(stale)
    assert (expired.status_code, expired.json()["error"]) == (400, "invalid_grant")
    assert "expired" in expired.json()["error_description"]


def test_an_access_token_lasts_an_hour_and_a_refresh_renews_it(app, me, monkeypatch):
    clock = Clock(monkeypatch)
    tokens = me.tokens(connect_code(app, "std.example"))
    clock.advance(minutes=59)
    assert works_on_mcp(me, tokens["access_token"])
    clock.advance(minutes=1, seconds=1)
    expired = me.call(tokens["access_token"], method="ping")
    assert expired.status_code == 401
    assert expired.headers["WWW-Authenticate"].endswith('error="invalid_token"')
    renewed = me.refresh(tokens["refresh_token"]).json()
    assert works_on_mcp(me, renewed["access_token"])


def test_a_refresh_token_lapses_after_30_days_unused(app, me, monkeypatch):
    clock = Clock(monkeypatch)
    first = me.tokens(connect_code(app, "std.example"))
    clock.advance(days=29, hours=23)
    second = me.refresh(first["refresh_token"])
    assert second.status_code == 200  # used within 30 days: a new one, 30 more days
    clock.advance(days=29, hours=23)
    third = me.refresh(second.json()["refresh_token"])
    assert third.status_code == 200
    clock.advance(days=30, seconds=1)
    lapsed = me.refresh(third.json()["refresh_token"])
    assert (lapsed.status_code, lapsed.json()["error"]) == (400, "invalid_grant")
    assert "30 days unused" in lapsed.json()["error_description"]


def test_only_digests_are_stored(app, me):
    code = me.authorize(connect_code(app, "std.example"))["code"]
    tokens = me.exchange(code).json()
    assert tokens["access_token"].startswith("egisat_")
    assert tokens["refresh_token"].startswith("egisrt_")
    assert len(tokens["access_token"]) >= len("egisat_") + 43  # 256 bits, base64url
    with db(app):
        assert OAuthCode.get().code_hash == hash_key(code)
        token = OAuthToken.get()
        assert (token.access_hash, token.refresh_hash) == (
            hash_key(tokens["access_token"]), hash_key(tokens["refresh_token"]))
        assert OAuthGrant.get().resource == "http://localhost/api/mcp"
