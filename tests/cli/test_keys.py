"""The `flask keys` commands (README, "CLI"): issuing, listing and revoking, and what a key
looks like once issued."""
import hashlib
import types

import pytest

from models import ApiKey, database
from tests.fixtures.cli import READ_KEY, SERVER_KEY, WRITE_KEY, fails_with_one_line, ok

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
    import app.access.keys as keys_module

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



def listed_keys(cli, domain: str) -> list[list[str]]:
    return [line.split("\t") for line in ok(cli("keys", "list", domain)).splitlines()]

