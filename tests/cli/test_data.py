"""The `flask data` commands' own checks (app.cli.data): exactly one id to erase, a known
site. What prune and erase delete: tests/retention/."""
import pytest


@pytest.mark.parametrize("args", [[], ["--user-id", "u", "--anonymous-id", "a"]])
def test_erase_needs_exactly_one_id(app, std_site, args):
    result = app.test_cli_runner().invoke(args=["data", "erase", "std.example", *args])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.strip() == (
        "Error: give exactly one of --user-id ID or --anonymous-id ID.")


def test_erase_on_an_unknown_site_fails_with_one_line(app):
    result = app.test_cli_runner().invoke(args=["data", "erase", "nope.example", "--user-id", "u"])
    assert result.exit_code == 1
    assert result.stderr.strip() == "Error: no site with domain 'nope.example'."

