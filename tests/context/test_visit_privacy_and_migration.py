"""Point 7: the client address, the raw User-Agent and the raw width reach neither the database
nor a log line. Point 8: migration 0006 leaves old rows null (migration 0016 then derives
their page and acquisition columns as ingest would: the request context cannot be), and
`flask db upgrade` stays idempotent (both backends)."""
import logging
import sqlite3
from datetime import datetime

import orjson
from playhouse.migrations import Runner

from app.cli.db import MIGRATIONS_DIR
from app.runtime.request_log import JsonFormatter
from models import database
from tests.fixtures.database import BACKEND
from tests.fixtures.helpers import database_bytes
from tests.fixtures.tracking import batch, event, goal, stored_events

ADDRESS = "193.99.144.87"  # a public address RIPE registers in DE
PROBE = "EgisPrivacyProbe/4.8.15"
USER_AGENT = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
              f"Chrome/131.0.0.0 Safari/537.36 {PROBE}")
WIDTH = 1234.5678


def test_neither_address_nor_user_agent_nor_width_is_stored_or_logged(make_app, std_site,
                                                                       migrated, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    client = make_app(TRUSTED_PROXIES=1).test_client()
    headers = {"X-API-Key": std_site.write_key, "Origin": "https://std.example",
               "User-Agent": USER_AGENT, "X-Forwarded-For": ADDRESS,
               "Accept-Language": "de-DE"}
    body = batch([event("pageview", referrer="https://www.google.com/"), event("click")],
                 fingerprint={"screenWidth": WIDTH})
    for path, payload in (("/api/events", body), ("/api/goals", goal())):
        response = client.post(path, data=orjson.dumps(payload), headers=headers,
                               content_type="application/json",
                               environ_base={"REMOTE_ADDR": "127.0.0.1"})
        assert response.status_code == 200, response.get_data()
    rows = stored_events(client.application)
    # They were read: what was derived from them is there.
    assert [(row.country, row.browser, row.os, row.language) for row in rows] == [
        ("DE", "Chrome", "Windows", "de")] * 3
    assert [row.screen for row in rows] == ["large", "large", None]

    stored = database_bytes(migrated)
    if BACKEND == "sqlite":
        path = migrated.removeprefix("sqlite:///")
        connection = sqlite3.connect(path)
        stored += "\n".join(connection.iterdump()).encode()
        connection.close()
    logged = "\n".join([JsonFormatter().format(record) for record in caplog.records]
                       + [caplog.text, *capfd.readouterr()])
    assert "request" in logged  # the request lines were captured
    for secret in (ADDRESS, PROBE, "EgisPrivacyProbe", str(WIDTH), "1234.567"):
        assert secret.encode() not in stored, secret
        assert secret not in logged, secret


def test_old_rows_keep_nulls_and_the_upgrade_is_idempotent(make_app, fresh_url):
    app = make_app(DATABASE_URL=fresh_url)
    moment = datetime(2026, 1, 2, 3, 4, 5)
    with app.app_context(), database.connection_context():
        Runner(database.obj, directory=MIGRATIONS_DIR).up("0005_instance_secret")
        marks = ", ".join([database.param] * 5)
        database.execute_sql(
            "INSERT INTO event (site_id, type, page_url, referrer, occurred_at, received_at, "
            f"weight) VALUES (1, 'pageview', {marks})",
            ("https://old.example/x?utm_source=y", "https://www.google.com/", moment, moment,
             1.0))
    runner = app.test_cli_runner()
    first = runner.invoke(args=["db", "upgrade"])
    assert first.exit_code == 0, first.output
    assert "0006_visit_context" in first.output
    second = runner.invoke(args=["db", "upgrade"])
    assert second.output.strip() == "Schema is up to date."
    (old,) = stored_events(app)
    assert old.page_url == "https://old.example/x?utm_source=y"
    for column in ("country", "device", "browser", "browser_version", "os", "os_version",
                   "language", "screen", "utm_medium", "utm_campaign", "utm_content",
                   "utm_term"):
        assert getattr(old, column) is None, column
    # utm_source wins over the referrer; the referrer (a search engine) gives the channel
    assert (old.path, old.hostname, old.source, old.channel, old.referrer_url,
            old.utm_source) == ("/x", "old.example", "y", "Organic Search",
                                "https://www.google.com/", "y")
