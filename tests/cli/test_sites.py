"""The `flask sites` commands (README, "CLI"), and the real `flask` entry point."""
import os
import subprocess
import sys

import pytest

from models import Site, database
from models.site import PLAN_QUOTAS
from tests.fixtures import ROOT
from tests.fixtures.cli import WRITE_KEY, fails_with_one_line, ok, site_row

# --- sites ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("plan", "quota"), [
    (None, 100_000), ("free", 100_000), ("standard", 1_000_000), ("pro", 10_000_000),
])
def test_sites_create_uses_the_plans_default_quota(app, cli, plan, quota):
    args = ["sites", "create", "shop.example"] + (["--plan", plan] if plan else [])
    out = ok(cli(*args))
    assert out.strip() == f"shop.example\tplan={plan or 'free'}\tmonthly_quota={quota}"
    site = site_row(app, "shop.example")
    assert site.plan == (plan or "free")
    assert site.monthly_quota is None  # follows the plan until overridden
    assert site.quota == quota


def test_sites_create_with_monthly_quota_overrides_the_plan(app, cli):
    out = ok(cli("sites", "create", "Shop.Example.", "--plan", "pro", "--monthly-quota", "5000"))
    assert "monthly_quota=5000" in out
    site = site_row(app, "shop.example")  # normalized: lower case, no trailing dot
    assert (site.plan, site.quota) == ("pro", 5000)


def test_sites_create_duplicate_domain_fails_with_one_clear_line(app, cli):
    ok(cli("sites", "create", "dup.example"))
    line = fails_with_one_line(cli("sites", "create", "DUP.example"), "already exists")
    assert "dup.example" in line
    with app.app_context(), database.connection_context():
        assert Site.select().count() == 1


@pytest.mark.parametrize(("domain", "says"), [
    ("not a domain", "is not a domain name: letters, digits and hyphens"),
    ("bad_domain!!", "is not a domain name: letters, digits and hyphens"),
    (" ", "is not a domain name"),
    ("-edge.example", "is not a domain name"),
    ("a..b.example", "is not a domain name"),
    ("x" * 64 + ".example", "is not a domain name"),
    ("☃.example", "is not a domain name"),
    ("http://x.example/path", "without scheme or path"),
    ("x.example/path", "without scheme or path"),
    ("*", "wildcards are not allowed"),
    ("*.app.example", "wildcards are not allowed"),
    ("app.example:8080", "a domain has no port; give 'app.example'"),
])
def test_sites_create_rejects_what_is_not_a_plain_host_name(app, cli, domain, says):
    fails_with_one_line(cli("sites", "create", "--", domain), says)
    with app.app_context(), database.connection_context():
        assert Site.select().count() == 0


@pytest.mark.parametrize(("domain", "stored"), [
    ("Bücher.Example", "xn--bcher-kva.example"),  # what a browser puts in Origin
    ("xn--bcher-kva.example", "xn--bcher-kva.example"),
    ("localhost", "localhost"),
    ("WWW.Shop-1.example.", "www.shop-1.example"),
])
def test_sites_create_stores_the_idna_form(app, cli, domain, stored):
    assert ok(cli("sites", "create", domain)).startswith(f"{stored}\t")
    assert site_row(app, stored).domain == stored


def test_an_international_domain_accepts_its_browsers(app, cli, make_app):
    ok(cli("sites", "create", "bücher.example"))
    key = ok(cli("keys", "create", "Bücher.example", "--kind", "write")).splitlines()[-1]
    response = make_app().test_client().get("/api/validate", headers={
        "X-API-Key": key, "Origin": "https://www.xn--bcher-kva.example"})
    assert response.status_code == 200, response.get_json()


def test_sites_update_validates_the_domain_too(cli):
    fails_with_one_line(cli("sites", "update", "app.example:8080", "--plan", "pro"),
                        "a domain has no port")


def test_sites_create_rejects_an_unknown_plan(cli):
    result = cli("sites", "create", "x.example", "--plan", "gold")
    assert result.exit_code == 2  # click usage error
    assert "gold" in result.output


def test_sites_update_plan_and_quota(app, cli):
    ok(cli("sites", "create", "up.example"))
    out = ok(cli("sites", "update", "up.example", "--plan", "standard"))
    assert out.strip() == "up.example\tplan=standard\tmonthly_quota=1000000"
    out = ok(cli("sites", "update", "up.example", "--monthly-quota", "42"))
    assert out.strip() == "up.example\tplan=standard\tmonthly_quota=42"
    site = site_row(app, "up.example")
    assert (site.plan, site.monthly_quota, site.quota) == ("standard", 42, 42)


@pytest.mark.parametrize(("before", "after"), [("free", "standard"), ("standard", "free"),
                                               ("pro", "pro")])
def test_a_plan_change_brings_the_plans_quota_in_both_directions(app, cli, before, after):
    ok(cli("sites", "create", "q.example", "--plan", before, "--monthly-quota", "5000"))
    result = cli("sites", "update", "q.example", "--plan", after)
    quota = PLAN_QUOTAS[after]
    assert ok(result).strip() == f"q.example\tplan={after}\tmonthly_quota={quota}"
    assert result.stderr.strip() == (
        f"Note: the custom quota 5000 was replaced by the {after} plan's {quota}; add "
        "--monthly-quota to set one.")
    site = site_row(app, "q.example")
    assert (site.plan, site.monthly_quota, site.quota) == (after, None, quota)


@pytest.mark.parametrize(("before", "after"), [("free", "pro"), ("pro", "free")])
def test_plan_and_quota_together_set_both_in_both_directions(app, cli, before, after):
    ok(cli("sites", "create", "q.example", "--plan", before, "--monthly-quota", "5000"))
    result = cli("sites", "update", "q.example", "--plan", after, "--monthly-quota", "7000")
    assert ok(result).strip() == f"q.example\tplan={after}\tmonthly_quota=7000"
    assert result.stderr == ""
    site = site_row(app, "q.example")
    assert (site.plan, site.quota) == (after, 7000)


def test_a_quota_alone_keeps_the_plan_and_a_plan_without_custom_quota_says_nothing(app, cli):
    ok(cli("sites", "create", "q.example", "--plan", "standard"))
    ok(cli("sites", "update", "q.example", "--monthly-quota", "42"))
    assert (site_row(app, "q.example").plan, site_row(app, "q.example").quota) == (
        "standard", 42)
    ok(cli("sites", "update", "q.example", "--plan", "pro"))  # drops 42, with a note
    result = cli("sites", "update", "q.example", "--plan", "free")
    assert ok(result).strip() == "q.example\tplan=free\tmonthly_quota=100000"
    assert result.stderr == ""


def test_sites_update_unknown_site_fails_with_one_clear_line(cli):
    fails_with_one_line(cli("sites", "update", "nope.example", "--plan", "pro"), "nope.example")


def test_sites_list(cli):
    assert ok(cli("sites", "list")) == ""
    ok(cli("sites", "create", "b.example", "--plan", "standard"))
    ok(cli("sites", "create", "a.example", "--monthly-quota", "7"))
    assert ok(cli("sites", "list")).splitlines() == [
        "a.example\tplan=free\tmonthly_quota=7",
        "b.example\tplan=standard\tmonthly_quota=1000000",
    ]


def test_flask_command_finds_wsgi_by_itself(migrated, make_app, tmp_path):
    """The real `flask` entry point, as an operator runs it from the repository root."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLASK_", "EGIS_"))}
    env["DATABASE_URL"] = migrated

    def flask(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "flask", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=60)

    upgrade = flask("db", "upgrade")
    assert upgrade.returncode == 0, upgrade.stderr
    assert upgrade.stdout.strip() == "Schema is up to date."
    created = flask("sites", "create", "cli.example", "--plan", "standard")
    assert created.returncode == 0, created.stderr
    issued = flask("keys", "create", "cli.example", "--kind", "write")
    assert issued.returncode == 0, issued.stderr
    key = issued.stdout.splitlines()[-1]
    assert WRITE_KEY.match(key)
    duplicate = flask("sites", "create", "cli.example")
    assert duplicate.returncode == 1
    assert duplicate.stderr.strip().splitlines() == [
        "Error: a site with domain 'cli.example' already exists."]
    response = make_app().test_client().get("/api/validate", headers={"X-API-Key": key})
    assert response.status_code == 200
    assert response.get_json()["plan"] == "standard"
