"""The request's deadline on its database waits (EGIS_REQUEST_DEADLINE_SECONDS,
app.storage.deadline), on a PostgreSQL of the test's own behind a live server: a COMMIT that
waits for a synchronous standby that does not exist is cancelled at the deadline and answered
503 with Retry-After, never 2xx although PostgreSQL committed it locally (its warning
"canceling wait for synchronous replication"); a frozen server (nothing answers, not even a
cancel) is cut at the deadline; egis's connection is closed after, not left waiting on the
server; and the next request, once the server answers again, is a 200.
"""
import time
from collections.abc import Iterator
from dataclasses import dataclass

import orjson
import psycopg2
import pytest

from tests.fixtures.cluster import Cluster, migrated_site
from tests.fixtures.database import BACKEND, SiteKeys
from tests.fixtures.servers import IN_REQUEST, LiveServer, launch_server, stop_server
from tests.fixtures.tracking import batch, post_live

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    BACKEND == "sqlite", reason="the deadline watches PostgreSQL connections")]

DEADLINE = 2  # EGIS_REQUEST_DEADLINE_SECONDS here
SLACK = 1.5  # what a request may take past it: the answer's own work, a loaded machine
NOBODY = "'egis_absent_standby'"  # a synchronous standby that never connects


@dataclass
class Server:
    cluster: Cluster
    live: LiveServer
    site: SiteKeys

    def sql(self, statement: str) -> list[tuple]:
        connection = psycopg2.connect(self.cluster.url_of("egis"), connect_timeout=5)
        connection.autocommit = True
        try:
            with connection.cursor() as cursor:
                cursor.execute("SET synchronous_commit = local")  # the test's own never waits
                cursor.execute(statement)
                return cursor.fetchall() if cursor.description else []
        finally:
            connection.close()

    def require_standby(self, names: str) -> None:
        self.sql(f"ALTER SYSTEM SET synchronous_standby_names = {names}")
        self.sql("SELECT pg_reload_conf()")
        expected = names.strip("'")
        deadline = time.monotonic() + 10
        while self.sql("SHOW synchronous_standby_names")[0][0] != expected:
            assert time.monotonic() < deadline, "the setting was not reloaded"
            time.sleep(0.05)

    def post(self, body: dict, path: str = "/api/events", headers: dict | None = None,
             live: LiveServer | None = None) -> tuple[int, dict, dict, float]:
        started = time.monotonic()
        status, headers, answer = post_live((live or self.live).url, orjson.dumps(body),
                                            headers or self.site.write_headers(), path=path,
                                            timeout=30)
        named = {name.lower(): value for name, value in dict(headers).items()}  # granian lowers
        return status, named, answer, time.monotonic() - started

    def stored(self, batch_key: str) -> int:
        return self.sql(f"SELECT count(*) FROM batch WHERE batch_key = '{batch_key}'")[0][0]

    def orders(self, order_id: str) -> int:
        return self.sql(f"SELECT count(*) FROM server_event WHERE order_id = '{order_id}'")[0][0]

    def waiting_backends(self) -> int:
        """Sessions of the server (egis's) other than this one still waiting for a standby."""
        return self.sql("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'")[0][0]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    cluster = Cluster()
    live = None
    try:
        cluster.start()
        admin = psycopg2.connect(cluster.url, connect_timeout=5)
        admin.autocommit = True
        with admin.cursor() as cursor:
            cursor.execute("CREATE DATABASE egis")
        admin.close()
        site = migrated_site(cluster.url_of("egis"))
        live = launch_server(cluster.url_of("egis"), tmp_path_factory.mktemp("deadline"),
                             workers=1, env={**IN_REQUEST,
                                             "EGIS_REQUEST_DEADLINE_SECONDS": str(DEADLINE)})
        yield Server(cluster, live, site)
    finally:
        if live is not None:
            stop_server(live)
        cluster.destroy()


def test_a_commit_waiting_for_a_standby_is_a_503_at_the_deadline(server: Server):
    body = batch(2)
    status, _, answer, _ = server.post(body)
    assert status == 200 and answer.get("duplicate") is not True, answer

    server.require_standby(NOBODY)
    try:
        waiting = batch(2)
        status, headers, answer, took = server.post(waiting)
        assert status == 503, answer
        assert int(headers["retry-after"]) >= 1
        assert took < DEADLINE + SLACK, f"answered after {took:.1f} s"
        # Committed locally (the warning's case), yet never acknowledged: a resend is the
        # client's, and it is stored once.
        assert server.stored(waiting["id"]) == 1
        deadline = time.monotonic() + 5
        while server.waiting_backends():  # egis's session does not go on waiting
            assert time.monotonic() < deadline, "a session still waits for the standby"
            time.sleep(0.1)
    finally:
        server.require_standby("''")
    status, _, answer, _ = server.post(waiting)
    assert status == 200 and answer["duplicate"] is True, answer
    assert server.stored(waiting["id"]) == 1


def test_a_frozen_server_is_cut_at_the_deadline(server: Server):
    status, _, answer, _ = server.post(batch(1))
    assert status == 200, answer

    server.cluster.freeze()
    try:
        status, headers, answer, took = server.post(batch(1))
    finally:
        server.cluster.thaw()
    assert status == 503, answer
    assert "retry-after" in headers  # names as sent: granian lowers them
    assert took < DEADLINE + SLACK, f"answered after {took:.1f} s"
    after = batch(1)
    status, _, answer, _ = server.post(after)
    assert status == 200, answer
    assert server.stored(after["id"]) == 1


ORDER = {"eventName": "purchase", "currency": "USD", "amount": 12.5, "orderId": "o-durable"}
GOAL = {"goal_name": "signup", "anonymous_id": "a-durable"}


def _sends(server: Server, live: LiveServer, first: dict) -> list[tuple[int, dict, float]]:
    """(status, answer, seconds) of sending the batch `first`, ORDER and GOAL."""
    found = []
    for body, path, headers in (
            (first, "/api/events", server.site.write_headers()),
            (ORDER, "/api/server/events", server.site.server_headers()),
            (GOAL, "/api/goals", server.site.write_headers(**{"Idempotency-Key": "goal-d"}))):
        status, _, answer, took = server.post(body, path, headers, live)
        found.append((status, answer, took))
    return found


def test_a_duplicate_is_answered_once_a_standby_holds_its_first_copy(
        server: Server, tmp_path_factory: pytest.TempPathFactory):
    # A server as deployed: a duplicate's tally is counted in memory, so answering it writes
    # nothing (the module's server writes its tallies in each request, which would wait).
    live = launch_server(server.cluster.url_of("egis"), tmp_path_factory.mktemp("durable"),
                         workers=1, env={"EGIS_REQUEST_DEADLINE_SECONDS": str(DEADLINE)})
    try:
        first = batch(2)
        assert [status for status, *_ in _sends(server, live, first)] == [200, 200, 200]
        # The valid variant: with no standby required, every resend is a 200 duplicate.
        assert all(status == 200 and answer["duplicate"] is True
                   for status, answer, _ in _sends(server, live, first))

        # Now commits need a standby, and none holds the first copies: no resend is
        # acknowledged (the first copies could be lost with this server).
        server.require_standby(NOBODY)
        try:
            for status, answer, took in _sends(server, live, first):
                assert status == 503, answer
                assert took < DEADLINE + SLACK, f"answered after {took:.1f} s"
        finally:
            server.require_standby("''")
        assert all(status == 200 and answer["duplicate"] is True
                   for status, answer, _ in _sends(server, live, first))
    finally:
        stop_server(live)
    assert server.stored(first["id"]) == 1 and server.orders(ORDER["orderId"]) == 1
