"""No connect code, authorization code, token or PKCE verifier is kept anywhere readable: not in
the database (a dump of it: pg_dump, or SQLite's files and their SQL dump), not in any log line
(the deployed server's access log and JSON lines, and this process's), not in /metrics."""
import sqlite3

import httpx2
import pytest

from app.runtime.request_log import JsonFormatter
from tests.fixtures.database import BACKEND
from tests.fixtures.helpers import database_bytes
from tests.fixtures.oauth import connect_code

pytestmark = pytest.mark.slow


def test_secrets_are_neither_stored_nor_logged(app, make_site, egis, agent, migrated, caplog,
                                               capfd):
    make_site("std.example", "standard")
    me = agent().register("Secret keeper")
    code = connect_code(app, "std.example")
    back = me.authorize(code.lower())
    first = me.exchange(back["code"]).json()
    second = me.refresh(first["refresh_token"]).json()
    assert me.call(second["access_token"], method="ping").status_code == 200
    assert me.exchange(back["code"]).status_code == 400  # a replay: logged as a refusal
    unused = connect_code(app, "std.example")
    assert me.http.post("/oauth/revoke", data={"token": second["refresh_token"],
                                               "client_id": me.client_id}).status_code == 200
    metrics = httpx2.get(f"{egis.url}/metrics").text

    secrets = {"connect code": code, "connect code, as typed": code.lower(),
               "connect code, bare": code.replace("-", ""), "unused connect code": unused,
               "authorization code": back["code"], "verifier": me.pkce.verifier,
               **{f"{name} {index}": tokens[name] for index, tokens in enumerate((first, second))
                  for name in ("access_token", "refresh_token")}}
    stored = database_bytes(migrated)
    if BACKEND == "sqlite":
        connection = sqlite3.connect(migrated.removeprefix("sqlite:///"))
        stored += "\n".join(connection.iterdump()).encode()
        connection.close()
    logged = "\n".join([egis.log(), *(JsonFormatter().format(record)
                                      for record in caplog.records), caplog.text,
                        *capfd.readouterr()])
    assert "/oauth/token" in logged and "/oauth/authorize" in logged  # the lines are there
    assert b"oauth_token" in stored and b"connect_code" in stored
    for name, secret in secrets.items():
        assert secret.encode() not in stored, name
        assert secret not in logged, name
        assert secret not in metrics, name
