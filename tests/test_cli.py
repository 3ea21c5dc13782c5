"""The operator's CLI (README, "CLI"): sites, keys, and what a key looks like once issued."""
import hashlib
import os
import re
import subprocess
import sys
import types

import pytest

from models import ApiKey, Site, database
from models.site import PLAN_QUOTAS
from tests.fixtures import ROOT
from tests.fixtures.cli import fails_with_one_line, ok, site_row

WRITE_KEY = re.compile(r"^egis_[A-Za-z0-9_-]{43}$")
SERVER_KEY = re.compile(r"^egiss_[A-Za-z0-9_-]{43}$")
READ_KEY = re.compile(r"^egisr_[A-Za-z0-9_-]{43}$")


@pytest.fixture
def cli(app):
    runner = app.test_cli_runner()

    def invoke(*args: str):
        return runner.invoke(args=list(args))

    return invoke


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


# --- keys ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("kind", "pattern"), [("write", WRITE_KEY), ("server", SERVER_KEY),
                                               ("read", READ_KEY)])
def test_keys_create_prints_the_key_alone_on_the_last_line(app, cli, kind, pattern):
    ok(cli("sites", "create", "k.example"))
    out = ok(cli("keys", "create", "k.example", "--kind", kind))
    key = out.splitlines()[-1]
    assert pattern.match(key), out
    # 43 base64url characters are exactly 32 random bytes.
    import base64
    assert len(base64.urlsafe_b64decode(key.split("_", 1)[1] + "=")) == 32
    with app.app_context(), database.connection_context():
        record = ApiKey.get()
        assert record.kind == kind
        assert record.site.domain == "k.example"


def test_keys_are_stored_only_as_sha256(app, cli):
    ok(cli("sites", "create", "k.example"))
    issued = [ok(cli("keys", "create", "k.example", "--kind", kind)).splitlines()[-1]
              for kind in ("write", "server", "read")]
    assert len(set(issued)) == 3  # random
    with app.app_context(), database.connection_context():
        columns = [f.column_name for f in ApiKey._meta.sorted_fields]
        rows = list(ApiKey.select().tuples())
    assert len(rows) == 3
    stored = " ".join(str(value) for row in rows for value in row)
    for key in issued:
        secret = key.split("_", 1)[1]
        assert key not in stored
        assert secret not in stored
        assert secret[:12] not in stored  # the hint shows a few characters at most
    digests = {row[columns.index("key_hash")] for row in rows}
    assert digests == {hashlib.sha256(key.encode()).hexdigest() for key in issued}


def test_keys_create_for_unknown_site_fails(cli):
    fails_with_one_line(cli("keys", "create", "nope.example", "--kind", "write"), "nope.example")


def test_keys_create_requires_a_kind(cli):
    ok(cli("sites", "create", "k.example"))
    assert cli("keys", "create", "k.example").exit_code == 2
    assert cli("keys", "create", "k.example", "--kind", "admin").exit_code == 2


def test_keys_list_never_shows_a_whole_key(cli):
    ok(cli("sites", "create", "k.example"))
    write = ok(cli("keys", "create", "k.example", "--kind", "write")).splitlines()[-1]
    server = ok(cli("keys", "create", "k.example", "--kind", "server")).splitlines()[-1]
    read = ok(cli("keys", "create", "k.example", "--kind", "read")).splitlines()[-1]
    ok(cli("keys", "revoke", server))
    ok(cli("keys", "revoke", read))
    lines = ok(cli("keys", "list", "k.example")).splitlines()
    assert len(lines) == 3
    text = "\n".join(lines)
    for key in (write, server, read):
        assert key not in text
        assert key.split("_", 1)[1] not in text
    write_line = next(line for line in lines if "\twrite\t" in line)
    server_line = next(line for line in lines if "\tserver\t" in line)
    read_line = next(line for line in lines if "\tread\t" in line)
    assert write_line.split("\t")[1].startswith(write[:8])  # a hint: prefix + a few characters
    assert read_line.split("\t")[1].startswith(read[:9])
    assert "\tactive\t" in write_line
    assert "\trevoked " in server_line and "\trevoked " in read_line


def test_keys_list_unknown_site_fails(cli):
    fails_with_one_line(cli("keys", "list", "nope.example"), "nope.example")


def test_keys_revoke_then_the_key_is_refused(make_app):
    app = make_app(KEY_CACHE_SECONDS=0)
    runner = app.test_cli_runner()
    ok(runner.invoke(args=["sites", "create", "r.example"]))
    issued = ok(runner.invoke(args=["keys", "create", "r.example", "--kind", "write"]))
    key = issued.splitlines()[-1]
    client = app.test_client()
    assert client.get("/api/validate", headers={"X-API-Key": key}).status_code == 200
    out = ok(runner.invoke(args=["keys", "revoke", key]))
    assert out.startswith("Revoked ")
    assert key not in out
    response = client.get("/api/validate", headers={"X-API-Key": key})
    assert response.status_code == 401
    assert response.get_json()["valid"] is False
    # Revoking twice is harmless; the key stays revoked.
    ok(runner.invoke(args=["keys", "revoke", key]))
    assert client.get("/api/validate", headers={"X-API-Key": key}).status_code == 401


def test_keys_revoke_unknown_key_fails(cli):
    fails_with_one_line(cli("keys", "revoke", "egis_" + "A" * 43), "no such key")


def listed_keys(cli, domain: str) -> list[list[str]]:
    return [line.split("\t") for line in ok(cli("keys", "list", domain)).splitlines()]


@pytest.mark.parametrize("by", ["id", "hint", "hint-without-ellipsis", "whole-key"])
def test_keys_revoke_by_what_keys_list_shows(make_app, by):
    app = make_app(KEY_CACHE_SECONDS=0)
    runner = app.test_cli_runner()

    def cli(*args: str):
        return runner.invoke(args=list(args))

    ok(cli("sites", "create", "r.example"))
    key = ok(cli("keys", "create", "r.example", "--kind", "write")).splitlines()[-1]
    other = ok(cli("keys", "create", "r.example", "--kind", "write")).splitlines()[-1]
    key_id, hint, kind, state, _created = listed_keys(cli, "r.example")[0]
    assert (kind, state) == ("write", "active") and key_id.isdigit()
    assert hint == key[:11] + "…"
    reference = {"id": key_id, "hint": hint, "hint-without-ellipsis": hint.rstrip("…"),
                 "whole-key": key}[by]
    out = ok(cli("keys", "revoke", reference))
    assert out.strip() == f"Revoked {hint} (id {key_id}, write key of r.example)"
    assert listed_keys(cli, "r.example")[0][3].startswith("revoked ")
    assert listed_keys(cli, "r.example")[1][3] == "active"
    client = app.test_client()
    assert client.get("/api/validate", headers={"X-API-Key": key}).status_code == 401
    assert client.get("/api/validate", headers={"X-API-Key": other}).status_code == 200


@pytest.mark.parametrize("reference", ["999", "egis_zzzzzz…", "egis_zzzzzz", "nonsense"])
def test_keys_revoke_by_an_unknown_reference_fails(cli, reference):
    ok(cli("sites", "create", "r.example"))
    ok(cli("keys", "create", "r.example", "--kind", "write"))
    fails_with_one_line(cli("keys", "revoke", reference), "no such key")


def test_keys_revoke_by_a_shared_hint_asks_for_the_id(app, cli):
    ok(cli("sites", "create", "r.example"))
    for _ in range(2):
        ok(cli("keys", "create", "r.example", "--kind", "write"))
    with app.app_context(), database.connection_context():
        ApiKey.update(hint="egis_AAAAAA…").execute()  # 1 in 2^36: made to happen here
        ids = [record.id for record in ApiKey.select().order_by(ApiKey.id)]
    line = fails_with_one_line(cli("keys", "revoke", "egis_AAAAAA"), "2 keys have the hint")
    assert line.endswith(f"revoke one by its id ({ids[0]}, {ids[1]}).")
    assert ok(cli("keys", "revoke", str(ids[1]))).startswith("Revoked egis_AAAAAA… (id ")


def test_revocation_takes_effect_within_the_key_cache_ttl(make_app, monkeypatch):
    """KEY_CACHE_SECONDS (default 30) is how long a worker may still accept a revoked key."""
    import app.keys as keys_module

    clock = types.SimpleNamespace(now=1000.0)
    monkeypatch.setattr(keys_module, "time", types.SimpleNamespace(monotonic=lambda: clock.now))
    app = make_app(KEY_CACHE_SECONDS=30)
    runner = app.test_cli_runner()
    ok(runner.invoke(args=["sites", "create", "ttl.example"]))
    key = ok(runner.invoke(args=["keys", "create", "ttl.example", "--kind", "write"])
             ).splitlines()[-1]
    client = app.test_client()
    assert client.get("/api/validate", headers={"X-API-Key": key}).status_code == 200  # cached
    ok(runner.invoke(args=["keys", "revoke", key]))
    clock.now += 29
    assert client.get("/api/validate", headers={"X-API-Key": key}).status_code == 200
    clock.now += 2  # past the TTL: looked up again, found revoked
    assert client.get("/api/validate", headers={"X-API-Key": key}).status_code == 401
    # A fresh worker (new app, empty cache) refuses it at once.
    assert make_app().test_client().get(
        "/api/validate", headers={"X-API-Key": key}).status_code == 401


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


def test_revoking_twice_says_so_and_succeeds(app):
    runner = app.test_cli_runner()
    assert runner.invoke(args=["sites", "create", "twice.example"]).exit_code == 0
    key = runner.invoke(args=["keys", "create", "twice.example", "--kind", "write"]
                        ).output.splitlines()[-1]
    first = runner.invoke(args=["keys", "revoke", key])
    assert first.exit_code == 0 and first.output.startswith("Revoked egis_")
    second = runner.invoke(args=["keys", "revoke", key])
    assert second.exit_code == 0
    assert "was already revoked on" in second.output
