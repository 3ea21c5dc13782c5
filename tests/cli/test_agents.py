"""The `flask agents` commands (app.cli.agents): a connect code alone on the last line, a site's
grants listed, a revocation of an unknown grant refused in one line. The OAuth flow around them:
tests/oauth/."""
from app.oauth import connect_codes
from models import database
from tests.fixtures.cli import fails_with_one_line, ok


def test_connect_prints_a_code_the_consent_page_accepts_once(app, cli, std_site):
    lines = ok(cli("agents", "connect", "std.example")).splitlines()
    assert lines[0].startswith("Connect code for std.example: ")
    code = lines[-1]
    with app.app_context(), database.connection_context():
        assert connect_codes.redeem(code).site.id == std_site.site.id
        assert connect_codes.redeem(code).refusal == connect_codes.USED


def test_connect_and_list_refuse_an_unknown_site(cli):
    fails_with_one_line(cli("agents", "connect", "nope.example"), "nope.example")
    fails_with_one_line(cli("agents", "list", "nope.example"), "nope.example")


def test_a_site_without_grants_says_so(cli, std_site):
    assert ok(cli("agents", "list", "std.example")) == "No agent is connected to std.example.\n"


def test_revoking_an_unknown_grant_fails_with_one_line(cli):
    fails_with_one_line(cli("agents", "revoke", "999999"), "no such grant: 999999")
    assert cli("agents", "revoke", "not-a-number").exit_code == 2
