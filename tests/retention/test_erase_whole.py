"""Erasure is all or nothing (app.retention.erase): a real `flask data erase` killed midway
(SIGKILL), or a PostgreSQL cluster of the test's own crashed midway (`pg_ctl stop -m
immediate`), leaves the person's events and every rollup row exactly as before; a rerun erases
them all, and the rollups then equal those derived anew from the events left.

Midway is a moment chosen, not guessed: the CLI runs with a module of the test's that wraps the
visits' rebuild (which erasure calls after deleting the events) to say so and wait, so the
events are deleted in the erasure's transaction when the kill comes.
"""
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.rollups import merging
from models import Event
from tests.fixtures import ROOT
from tests.fixtures.cluster import Cluster
from tests.fixtures.database import BACKEND, create_site
from tests.fixtures.helpers import db
from tests.fixtures.rollups import page_table, slot_table, visit_table
from tests.fixtures.tracking import batch, event, post_json

PAUSING_APP = '''
import os, time
from pathlib import Path
from app.rollups import visits

def paused(*args, **kwargs):
    Path(os.environ["EGIS_TEST_PAUSED"]).touch()
    time.sleep(600)

visits.rebuild = paused
from wsgi import app
'''


def send(client, site, session: str, anonymous: str, path: str, **fields: Any) -> None:
    body = batch([event(pageUrl=f"https://std.example{path}")], sessionId=session,
                 anonymousId=anonymous, **fields)
    assert post_json(client, "/api/events", body, site.write_headers()).status_code == 200


def seed(client, site) -> None:
    """The person (browser p-1, user u-1) alone in one visit and beside another browser in
    another; a stranger's visit."""
    send(client, site, "own", "p-1", "/a", userId="u-1")
    send(client, site, "own", "p-1", "/b")
    send(client, site, "shared", "p-1", "/c")
    send(client, site, "shared", "k-1", "/d")
    send(client, site, "stranger", "k-2", "/e")


def state(app) -> tuple[Any, ...]:
    """Everything erasure touches: the events (browser, page), the rollups' rows."""
    with db(app):
        events = sorted(Event.select(Event.anonymous_id, Event.path).tuples())
    return events, visit_table(app), page_table(app), slot_table(app)


def erase_command(database_url: str, tmp_path: Path, pausing: bool) -> tuple[list[str], dict]:
    env = {**os.environ, "DATABASE_URL": database_url, "PYTHONPATH": f"{tmp_path}:{ROOT}",
           "EGIS_TEST_PAUSED": str(tmp_path / "paused")}
    target = "wsgi:app"
    if pausing:
        (tmp_path / "pausing_app.py").write_text(PAUSING_APP)
        target = "pausing_app:app"
    return ([sys.executable, "-m", "flask", "--app", target, "data", "erase", "std.example",
             "--anonymous-id", "p-1"], env)


@pytest.fixture
def paused_erasure(tmp_path: Path) -> Iterator[Any]:
    """Start `flask data erase` on a database and return once it has deleted the events, in
    its transaction, and waits; the process is killed after the test whatever happened."""
    started: list[subprocess.Popen] = []

    def start(database_url: str) -> subprocess.Popen:
        command, env = erase_command(database_url, tmp_path, pausing=True)
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT)
        started.append(process)
        deadline = time.monotonic() + 60
        while not (tmp_path / "paused").exists():
            assert process.poll() is None, process.stdout.read().decode()
            assert time.monotonic() < deadline, "the erasure did not reach its midway point"
            time.sleep(0.05)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def erase_to_the_end(database_url: str, tmp_path: Path) -> str:
    command, env = erase_command(database_url, tmp_path, pausing=False)
    run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return run.stdout


def assert_erased(app, before: tuple[Any, ...]) -> None:
    """The person's events gone, the others' kept, and the rollups as derived anew."""
    events, visits, pages, slots = state(app)
    assert events == [(browser, path) for browser, path in before[0] if browser != "p-1"]
    with db(app):
        merging.rebuild()
    assert state(app)[1:] == (visits, pages, slots)
    assert [(row["session_id"], row["visitor"], row["events"]) for row in visits] == [
        ("shared", "k-1", 1), ("stranger", "k-2", 1)]
    assert not any("p-1" in str(value) for row in [*visits, *pages] for value in row.values())


def test_a_killed_erasure_erased_nothing_and_a_rerun_erases_all(app, client, std_site,
                                                                migrated, paused_erasure,
                                                                tmp_path):
    seed(client, std_site)
    before = state(app)
    process = paused_erasure(migrated)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert state(app) == before
    assert "Erased anonymous id 'p-1' of std.example." in erase_to_the_end(migrated, tmp_path)
    assert_erased(app, before)


@pytest.mark.slow
@pytest.mark.skipif(BACKEND != "postgres", reason="a PostgreSQL cluster to crash")
def test_a_crash_of_postgresql_midway_erased_nothing_and_a_rerun_erases_all(
        make_app, paused_erasure, tmp_path):
    cluster = Cluster()
    try:
        cluster.start()
        app = make_app(DATABASE_URL=cluster.url)
        result = app.test_cli_runner().invoke(args=["db", "upgrade"])
        assert result.exit_code == 0, result.output
        site = create_site(app, "std.example", "standard")
        seed(app.test_client(), site)
        before = state(app)
        process = paused_erasure(cluster.url)
        cluster.crash()
        process.kill()
        process.wait(timeout=30)
        cluster.start()  # recovery replays the WAL: the erasure never committed
        from app.storage.db import release_connections

        release_connections()  # the pool's connections died with the server
        assert state(app) == before
        erase_to_the_end(cluster.url, tmp_path)
        assert_erased(app, before)
    finally:
        cluster.destroy()
