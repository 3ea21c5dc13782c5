"""Every refusal of the OAuth contract, on the live server over HTTP, each after the valid
variant of the same step has succeeded in the same test (so that a missing feature cannot pass
for a refusal): a wrong verifier, a reused code, a redirect mismatch, another client's code,
plain PKCE, a wrong resource, a replayed refresh token, a token on an ingest endpoint, another
site's data, a revoked grant. (A private-address client URL: tests/oauth/test_documents.py.)
"""
from typing import Any

import pytest

from models import OAuthGrant
from tests.fixtures.helpers import db
from tests.fixtures.oauth import Agent, connect_code
from tests.fixtures.tracking import batch, event

pytestmark = pytest.mark.slow


def error_of(answer: Any) -> tuple[int, str]:
    body = answer.json()
    assert set(body) <= {"error", "error_description"} and body.get("error_description")
    return answer.status_code, body["error"]


def works_on_mcp(agent: Agent, access_token: str) -> bool:
    answer = agent.call(access_token, method="ping")
    if answer.status_code == 200:
        return True
    assert answer.status_code == 401, answer.text
    assert 'error="invalid_token"' in answer.headers["WWW-Authenticate"]
    return False


@pytest.fixture
def site(app, make_site):
    return make_site("std.example", "standard")


def test_a_wrong_verifier_is_refused_and_leaves_the_code_usable(app, site, agent):
    me = agent().register()
    assert me.exchange(me.authorize(connect_code(app, "std.example"))["code"]).status_code == 200
    code = me.authorize(connect_code(app, "std.example"))["code"]
    wrong = me.exchange(code, code_verifier="w" * 64)
    assert error_of(wrong) == (400, "invalid_grant")
    assert me.exchange(code).status_code == 200


def test_a_reused_code_is_refused_and_revokes_what_it_issued(app, site, agent):
    me = agent().register()
    code = me.authorize(connect_code(app, "std.example"))["code"]
    first = me.exchange(code)
    assert first.status_code == 200 and first.headers["Cache-Control"] == "no-store"
    tokens = first.json()
    assert set(tokens) == {"access_token", "token_type", "expires_in", "refresh_token", "scope"}
    assert (tokens["token_type"], tokens["expires_in"], tokens["scope"]) == (
        "Bearer", 3600, "stats:read")
    assert works_on_mcp(me, tokens["access_token"])

    again = me.exchange(code)
    assert error_of(again) == (400, "invalid_grant")
    assert "used before" in again.json()["error_description"]
    assert not works_on_mcp(me, tokens["access_token"])
    assert error_of(me.refresh(tokens["refresh_token"])) == (400, "invalid_grant")


def test_a_redirect_uri_the_client_does_not_have_is_a_page_never_a_redirect(app, site, agent):
    me = agent().register()
    assert me.http.get("/oauth/authorize", params=me.authorization()).status_code == 200
    elsewhere = me.http.get("/oauth/authorize", params=me.authorization(
        redirect_uri="http://127.0.0.1:1/elsewhere"))
    assert elsewhere.status_code == 400 and "Location" not in elsewhere.headers
    assert elsewhere.headers["Content-Type"].startswith("text/html")
    assert "not one this client registered" in elsewhere.text
    unknown = me.http.get("/oauth/authorize", params=me.authorization(client_id="nobody"))
    assert unknown.status_code == 400 and "Location" not in unknown.headers

    # At the token endpoint: the redirect URI must be the one the code was issued for.
    code = me.authorize(connect_code(app, "std.example"))["code"]
    assert error_of(me.exchange(code, redirect_uri="http://127.0.0.1:1/elsewhere")) == (
        400, "invalid_grant")
    assert me.exchange(code).status_code == 200


def test_another_clients_code_is_refused(app, site, agent):
    mine, theirs = agent().register("Mine"), agent().register("Theirs")
    code = mine.authorize(connect_code(app, "std.example"))["code"]
    theirs.pkce = mine.pkce  # even with the right verifier
    assert error_of(theirs.exchange(code)) == (400, "invalid_grant")
    assert mine.exchange(code).status_code == 200
    unknown = mine.exchange(code, client_id="nobody")
    assert error_of(unknown) == (401, "invalid_client")


def test_plain_pkce_and_no_pkce_are_refused(app, site, agent):
    me = agent().register()
    assert me.http.get("/oauth/authorize", params=me.authorization()).status_code == 200
    assert me.authorize(connect_code(app, "std.example"))["code"]  # allowed: told by redirect
    stranger = agent().register("Never allowed")
    for changes in ({"code_challenge_method": "plain", "code_challenge": me.pkce.verifier},
                    {"code_challenge_method": None}, {"code_challenge": None}):
        parameters = me.authorization(**changes)
        refused = me.http.get("/oauth/authorize", params=parameters)
        assert refused.status_code == 302, changes
        back = refused.headers["Location"]
        assert back.startswith(me.redirect_uri + "?error=invalid_request&error_description=")
        assert f"state={parameters['state']}" in back and "iss=http" in back
        # A client no owner allowed gets egis's own page for the same request, never a
        # redirect to the URI its registrant chose (RFC 9700 section 4.11.2).
        page = stranger.http.get("/oauth/authorize", params=stranger.authorization(**changes))
        assert page.status_code == 400 and "Location" not in page.headers, changes
        assert page.headers["Content-Type"].startswith("text/html")
        assert "This app cannot connect" in page.text and "code_challenge" in page.text


def test_a_wrong_resource_is_refused(app, site, agent):
    me = agent().register()
    assert me.http.get("/oauth/authorize", params=me.authorization()).status_code == 200
    code = me.authorize(connect_code(app, "std.example"))["code"]
    other = me.http.get("/oauth/authorize", params=me.authorization(
        resource="https://elsewhere.example/api/mcp"))
    assert other.status_code == 302 and "error=invalid_target" in other.headers["Location"]

    assert error_of(me.exchange(code, resource="https://elsewhere.example/api/mcp")) == (
        400, "invalid_grant")
    tokens = me.exchange(code).json()
    assert error_of(me.refresh(tokens["refresh_token"], resource="https://elsewhere.example/")
                    ) == (400, "invalid_grant")
    assert me.refresh(tokens["refresh_token"], resource=f"{me.base}/api/mcp").status_code == 200


def test_a_replayed_refresh_token_revokes_the_grant(app, site, agent):
    me = agent().register()
    first = me.tokens(connect_code(app, "std.example"))
    rotated = me.refresh(first["refresh_token"])
    assert rotated.status_code == 200
    second = rotated.json()
    assert second["refresh_token"] != first["refresh_token"]
    assert works_on_mcp(me, second["access_token"])

    replayed = me.refresh(first["refresh_token"])
    assert error_of(replayed) == (400, "invalid_grant")
    assert "used before" in replayed.json()["error_description"]
    assert not works_on_mcp(me, second["access_token"])
    assert error_of(me.refresh(second["refresh_token"])) == (400, "invalid_grant")


INGEST = [("POST", "/api/events", batch(1)), ("POST", "/api/goals", {"goal_name": "signup"}),
          ("POST", "/api/server/events", {"eventName": "x"}),
          ("POST", "/api/crawl/report", {"userAgent": "Googlebot", "path": "/"}),
          ("GET", "/api/validate", None)]


def test_a_token_works_on_mcp_only(app, site, agent):
    me = agent().register()
    token = me.tokens(connect_code(app, "std.example"))["access_token"]
    assert works_on_mcp(me, token)
    for method, path, body in INGEST:  # an unknown key there, whichever header carries it
        for headers in ({"Authorization": f"Bearer {token}"}, {"X-API-Key": token}):
            answer = me.http.request(method, path, json=body, headers=headers)
            assert answer.status_code == 401, (path, headers, answer.text)
            if path in ("/api/server/events", "/api/crawl/report") and "X-API-Key" in headers:
                continue  # those read no X-API-Key at all (and say so)
            assert answer.json()["error"] == "Invalid API key: unknown or revoked.", answer.text


def test_a_token_reads_its_own_sites_data_only(app, make_site, agent):
    sites = {"a.example": make_site("a.example", "standard"),
             "b.example": make_site("b.example", "standard")}
    for domain, pageviews in (("a.example", 2), ("b.example", 3)):
        events = [event(pageUrl=f"https://{domain}/{index}") for index in range(pageviews)]
        stored = agent().http.post("/api/events", json=batch(events), headers={
            "X-API-Key": sites[domain].write_key})
        assert stored.status_code == 200, stored.text
    me = agent().register()
    for domain, pageviews in (("a.example", 2), ("b.example", 3)):
        token = me.tokens(connect_code(app, domain))["access_token"]
        answer = me.call(token, name="get_overview", arguments={})
        assert answer.status_code == 200, answer.text
        overview = answer.json()["result"]["structuredContent"]
        assert (overview["site"], overview["pageviews"]) == (domain, pageviews)


def test_a_revoked_grant_stops_at_once(app, site, agent):
    me = agent().register("Revoked by the operator")
    tokens = me.tokens(connect_code(app, "std.example"))
    assert works_on_mcp(me, tokens["access_token"])
    runner = app.test_cli_runner()
    listed = runner.invoke(args=["agents", "list", "std.example"])
    assert listed.exit_code == 0 and "Revoked by the operator\t127.0.0.1:1\t" in listed.output
    with db(app):
        [grant] = OAuthGrant.select()
    revoked = runner.invoke(args=["agents", "revoke", str(grant.id)])
    assert revoked.exit_code == 0 and "its tokens no longer work" in revoked.output
    assert not works_on_mcp(me, tokens["access_token"])
    assert error_of(me.refresh(tokens["refresh_token"])) == (400, "invalid_grant")
    assert "No agent is connected" in runner.invoke(args=["agents", "list", "std.example"]).output
    assert runner.invoke(args=["agents", "revoke", "999999"]).exit_code == 1


def test_revocation_by_the_client_ends_its_grant_and_answers_200_always(app, site, agent):
    me, other = agent().register("Me"), agent().register("Other")
    mine = me.tokens(connect_code(app, "std.example"))
    theirs = other.tokens(connect_code(app, "std.example"))
    for junk in ({"token": "nothing-like-a-token", "client_id": me.client_id}, {},
                 {"token": theirs["access_token"], "client_id": me.client_id}):
        answer = me.http.post("/oauth/revoke", data=junk)
        assert (answer.status_code, answer.json()) == (200, {}), junk
    assert works_on_mcp(other, theirs["access_token"])  # not the sender's: nothing changed

    assert works_on_mcp(me, mine["access_token"])
    answer = me.http.post("/oauth/revoke", data={"token": mine["refresh_token"],
                                                 "client_id": me.client_id})
    assert (answer.status_code, answer.json()) == (200, {})
    assert not works_on_mcp(me, mine["access_token"])
    assert works_on_mcp(other, theirs["access_token"])
