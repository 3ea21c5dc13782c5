"""The consent step over HTTP, in this process (a test clock moves time): connect codes (any
case, dashes optional; wrong, used and expired each said; 15 minutes; once), the limit on wrong
codes per client address, deny, the form's CSRF token (its cookie, its parameters, its age),
and the faults of a request: sent back to a client an owner allowed before, a page for a
stranger. The page in a real browser: tests/oauth/test_consent_browser.py.
"""
import re
from datetime import timedelta
from pathlib import Path

import pytest

from app.oauth import connect_codes, consent
from models import ConnectCode
from models.site import utcnow
from tests.fixtures.helpers import db
from tests.fixtures.oauth import connect_code, in_process

CODE_SHAPE = re.compile(r"[0-9A-HJKMNP-TV-Z]{4}(-[0-9A-HJKMNP-TV-Z]{4}){3}")
NOTICE = re.compile(r'<p class="notice" role="alert">([^<]*)</p>')


@pytest.fixture
def make(app, make_site):
    make_site("std.example", "standard")
    with in_process(app) as make:
        yield make


@pytest.fixture
def me(make):
    return make().register()


def notice(answer) -> str:
    assert answer.headers["Content-Type"].startswith("text/html")
    return NOTICE.search(answer.text).group(1).replace("&#39;", "'")


def test_connect_codes_are_80_bits_shown_in_groups_and_stored_hashed(app, make_site):
    make_site("std.example", "standard")
    issued = [connect_code(app, "std.example") for _ in range(3)]
    assert all(CODE_SHAPE.fullmatch(code) for code in issued) and len(set(issued)) == 3
    with db(app):
        stored = {row.code_hash for row in ConnectCode.select()}
    assert len(stored) == 3 and not any(code.replace("-", "") in "".join(stored)
                                        for code in issued)
    assert connect_codes.normalize(" k7qf 9xmb-2rtd-wp4h ") == "K7QF9XMB2RTDWP4H"
    assert connect_codes.normalize("K7QF-9XMB-2RTD-WP4") is None  # 15 characters
    assert connect_codes.normalize("IL0O-9XMB-2RTD-WP4H") == "1100" + "9XMB2RTDWP4H"
    failed = app.test_cli_runner().invoke(args=["agents", "connect", "nowhere.example"])
    assert failed.exit_code == 1 and "nowhere.example" in failed.output


README = (Path(__file__).parents[2] / "README.md").read_text()


def test_the_page_names_the_command_as_the_readme_does(app, me):
    """The virtualenv's flask, by its path: the README warns that a bare `flask` may be another
    installation's."""
    page = me.http.get("/oauth/authorize", params=me.authorization())
    assert page.status_code == 200
    help_text = re.search(r'<p class="small" id="code-help">(.*?)</p>', page.text).group(1)
    command = re.search(r"<code>([^<]*agents connect[^<]*)</code>", help_text).group(1)
    assert command == ".venv/bin/flask agents connect DOMAIN"
    assert "`.venv/bin/flask agents connect localhost`" in README
    assert "a bare `flask` finds" in README
    issued = app.test_cli_runner().invoke(args=[*command.split()[1:-1], "std.example"])
    assert issued.exit_code == 0 and CODE_SHAPE.search(issued.output)


def test_a_code_works_in_any_case_without_dashes_once(app, me):
    code = connect_code(app, "std.example")
    back = me.authorize(code.lower().replace("-", ""))
    assert back["code"]
    again = me.decide(me.consent_form(me.authorization()), code)
    assert again.status_code == 400
    assert notice(again) == "That connect code was used already: make a new one."


def test_a_wrong_code_says_so(app, me):
    assert me.authorize(connect_code(app, "std.example"))["code"]
    form = me.consent_form(me.authorization())
    for typed in ("AAAA-AAAA-AAAA-AAAA", "not a code", ""):
        wrong = me.decide(form, typed)
        assert wrong.status_code == 400 and "Location" not in wrong.headers
        assert notice(wrong) == "That connect code is wrong: check it, or make a new one."


def test_a_code_lasts_15_minutes(app, me, monkeypatch: pytest.MonkeyPatch):
    fresh, stale = connect_code(app, "std.example"), connect_code(app, "std.example")
    monkeypatch.setattr(connect_codes, "utcnow", lambda: utcnow() + timedelta(minutes=14))
    assert me.authorize(fresh)["code"]
    monkeypatch.setattr(connect_codes, "utcnow", lambda: utcnow() + timedelta(minutes=15))
    expired = me.decide(me.consent_form(me.authorization()), stale)
    assert expired.status_code == 400
    assert notice(expired).startswith("That connect code has expired")


def test_five_wrong_codes_from_one_address_then_429(app, me):
    assert me.authorize(connect_code(app, "std.example"))["code"]
    form = me.consent_form(me.authorization())
    for _ in range(5):
        assert me.decide(form, "AAAA-AAAA-AAAA-AAAA").status_code == 400
    right = connect_code(app, "std.example")
    for typed in ("AAAA-AAAA-AAAA-AAAA", right):
        limited = me.decide(form, typed)
        assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
        assert "Too many wrong connect codes" in limited.text
        assert ".venv/bin/flask agents connect DOMAIN" in limited.text
    with db(app):  # the right code was not even looked at: still unused
        assert ConnectCode.select().where(ConnectCode.used_at.is_null()).count() == 1


def test_deny_sends_access_denied_back(app, me):
    assert me.authorize(connect_code(app, "std.example"))["code"]
    parameters = me.authorization()
    denied = me.decide(me.consent_form(parameters), "", decision="deny")
    assert denied.status_code == 302
    assert denied.headers["Location"] == (
        f"{me.redirect_uri}?error=access_denied&error_description=The+resource+owner+or+"
        f"authorization+server+denied+the+request&state={parameters['state']}"
        "&iss=http%3A%2F%2Flocalhost")


def test_the_form_is_bound_to_its_request_its_browser_and_its_age(app, me, monkeypatch):
    assert me.authorize(connect_code(app, "std.example"))["code"]
    code = connect_code(app, "std.example")
    form = me.consent_form(me.authorization())
    # Changed parameters (another state, another challenge): not the form egis made.
    for name in ("state", "code_challenge"):
        changed = me.decide({**form, name: form[name][:-1] + "x"}, code)
        assert changed.status_code == 403 and "This form has expired" in changed.text
    # Another browser (no cookie), a forged token, an old form.
    me.http.cookies.clear()
    assert "This form has expired" in me.decide(form, code).text
    form = me.consent_form(me.authorization())
    assert "This form has expired" in me.decide({**form, "csrf_token": "x.y.z"}, code).text
    monkeypatch.setattr(consent, "utcnow", lambda: utcnow() + timedelta(minutes=30, seconds=1))
    assert "This form has expired" in me.decide(form, code).text
    monkeypatch.undo()
    assert me.decide(form, code).status_code == 302  # the code was never used by the above
    in_query = me.http.post("/oauth/authorize", params={"state": "x"},
                            data={**form, "connect_code": code, "decision": "allow"})
    assert in_query.status_code == 400


@pytest.mark.parametrize(("changes", "error"), [
    ({"scope": "stats:write"}, "invalid_scope"),
    ({"response_type": "token"}, "unsupported_response_type"),
    ({"response_type": None}, "unsupported_response_type"),
    ({"code_challenge": "short"}, "invalid_request"),
    ({"code_challenge": None}, "invalid_request"),
    ({"code_challenge_method": "plain"}, "invalid_request"),
    ({"resource": "https://elsewhere.example/api/mcp"}, "invalid_target"),
])
def test_a_fault_goes_back_to_a_client_allowed_before_and_never_to_a_stranger(
        app, make, changes, error):
    granted, stranger = make().register("Allowed before"), make().register("Stranger")
    assert granted.authorize(connect_code(app, "std.example"))["code"]  # an owner allowed it
    for each in (granted, stranger):
        assert each.http.get("/oauth/authorize", params=each.authorization()).status_code == 200

    parameters = granted.authorization(**changes)
    refused = granted.http.get("/oauth/authorize", params=parameters)
    assert refused.status_code == 302
    back = dict(item.split("=", 1) for item in
                refused.headers["Location"].split("?", 1)[1].split("&"))
    assert set(back) == {"error", "error_description", "state", "iss"}
    assert (back["error"], back["state"], back["iss"]) == (
        error, parameters["state"], "http%3A%2F%2Flocalhost")

    # The same fault from a client no owner ever allowed: egis's own page, no redirect.
    page = stranger.http.get("/oauth/authorize", params=stranger.authorization(**changes))
    assert page.status_code == 400 and "Location" not in page.headers
    assert page.headers["Content-Type"].startswith("text/html")
    assert "This app cannot connect" in page.text and stranger.redirect_uri not in page.text
