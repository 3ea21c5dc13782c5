"""Reads on a streaming replica (EGIS_READ_DATABASE_URL, app.storage.replica), against a primary
and a hot standby of the test's own (initdb, pg_basebackup -R, pg_ctl on free ports) behind a
live server: a call counts every event stored before it (read your writes) and the standby
served it (its pg_stat_statements counts the reads; egis_read_replica_reads_total); a standby
whose replay is paused, that is stopped, or that cancels the read for a recovery conflict hands
the read to the primary (a log line, egis_read_replica_fallbacks_total{reason}), never an
error; /readyz names the standby's state and stays 200; a standby that comes back serves the
reads again.
"""
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import psycopg2
import pytest

from app.storage.db import release_connections
from tests.fixtures.cluster import Cluster, migrated_site, sql_rows
from tests.fixtures.database import BACKEND, SiteKeys
from tests.fixtures.rollups import live_json, live_tool, metric, visit_batch
from tests.fixtures.servers import LiveServer, launch_server, stop_server
from tests.fixtures.tracking import post_live

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    BACKEND == "sqlite", reason="a PostgreSQL streaming replica")]

WAIT = 1  # EGIS_READ_REPLICA_WAIT_SECONDS here
STATEMENTS = "pg_stat_statements"
# hot_standby_feedback: vacuum on the primary keeps what the standby's reads see (as
# deploy/SCALING.md advises); max_standby_streaming_delay 0: a lock the primary takes cancels a
# standby read at once, so the conflict test needs no long wait.
STANDBY = {"hot_standby_feedback": "on", "max_standby_streaming_delay": "0",
           "shared_preload_libraries": STATEMENTS}


@dataclass
class Pair:
    primary: Cluster
    standby: Cluster
    server: LiveServer
    site: SiteKeys
    posted: int = 0

    def sql(self, cluster: Cluster, statement: str) -> list[tuple]:
        return sql_rows(cluster.url, statement)

    def post_visit(self, views: int = 2) -> None:
        self.posted += 1
        body = visit_batch(f"s-{self.posted}", f"a-{self.posted}", views)
        status, _, answer = post_live(self.server.url, orjson.dumps(body),
                                      self.site.write_headers())
        assert status == 200, answer

    def totals(self, **arguments) -> dict:
        return live_tool(self.server.url, self.site.server_key, "query", period="7d",
                         metrics=["visits", "pageviews"], **arguments)["structuredContent"]

    def metrics(self) -> str:
        return live_json(self.server.url, "/metrics")[1]

    def replica_reads(self) -> float:
        return metric(self.metrics(), "egis_read_replica_reads_total")

    def fallbacks(self, reason: str) -> float:
        return metric(self.metrics(), "egis_read_replica_fallbacks_total", reason=reason)

    def standby_reads(self) -> int:
        """The standby's count of statements that read the visit table (the tools' reads)."""
        rows = self.sql(self.standby, f"SELECT COALESCE(sum(calls), 0) FROM {STATEMENTS} "
                                      "WHERE query ILIKE '%FROM \"visit\"%'")
        return int(rows[0][0])

    def ready(self) -> tuple[int, dict]:
        return live_json(self.server.url, "/readyz")


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    primary = Cluster({"autovacuum": "off", "shared_preload_libraries": STATEMENTS})
    standby = server = None
    try:
        primary.start()
        site = migrated_site(primary.url)
        connection = psycopg2.connect(primary.url)
        connection.autocommit = True
        connection.cursor().execute(f"CREATE EXTENSION {STATEMENTS}")
        connection.close()
        standby = Cluster(STANDBY, standby_of=primary)
        standby.start()
        env = {"EGIS_READ_DATABASE_URL": standby.url,
               "EGIS_READ_REPLICA_WAIT_SECONDS": str(WAIT),
               **{f"EGIS_RATE_LIMIT_{name}": "1000000/minute" for name in ("KEY", "IP", "MCP")}}
        server = launch_server(primary.url, tmp_path_factory.mktemp("replica"), 2, env,
                               deploy_config=True)  # its metrics: every worker's summed
        yield Pair(primary, standby, server, site)
    finally:
        if server is not None:
            stop_server(server)
        release_connections()
        for cluster in (standby, primary):
            if cluster is not None:
                cluster.destroy()


def ready(state: str) -> tuple[int, dict]:
    """/readyz's answer with the primary up and the replica in `state`."""
    return 200, {"status": "ready", "database": "up", "rateLimitStore": "up", "readReplica": state}


def wait_until(condition, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition did not come true"
        time.sleep(0.1)


def test_the_replica_serves_the_reads_and_counts_every_event_stored_before(pair: Pair):
    assert pair.ready() == ready("ok")
    served, on_standby = pair.replica_reads(), pair.standby_reads()
    for _ in range(3):
        pair.post_visit()  # then asked at once: the call waits for the standby's replay
        assert pair.totals()["totals"] == [pair.posted, 2 * pair.posted]
    # a comparison runs its two periods at once, the second in a snapshot exported to it
    compared = pair.totals(compare="previous_period")
    assert compared["totals"] == [pair.posted, 2 * pair.posted]
    assert pair.replica_reads() == served + 4
    assert pair.standby_reads() > on_standby
    assert pair.fallbacks("lagging") == pair.fallbacks("down") == pair.fallbacks("conflict") == 0


def test_a_paused_replay_hands_the_read_to_the_primary(pair: Pair):
    pair.sql(pair.standby, "SELECT pg_wal_replay_pause()")
    try:
        pair.post_visit()  # the standby does not have it
        lagging = pair.fallbacks("lagging")
        assert pair.totals()["totals"] == [pair.posted, 2 * pair.posted]
        assert pair.fallbacks("lagging") == lagging + 1
        assert "read replica lagging, reading from the primary" in pair.server.log()
        assert pair.ready() == ready("lagging")
    finally:
        pair.sql(pair.standby, "SELECT pg_wal_replay_resume()")
    served = pair.replica_reads()
    assert pair.totals()["totals"] == [pair.posted, 2 * pair.posted]
    assert pair.replica_reads() == served + 1


def test_a_stopped_replica_and_its_return(pair: Pair):
    pair.standby.stop()
    try:
        pair.post_visit()
        down = pair.fallbacks("down")
        assert pair.totals()["totals"] == [pair.posted, 2 * pair.posted]
        assert pair.fallbacks("down") == down + 1
        assert "read replica down, reading from the primary" in pair.server.log()
        assert pair.ready() == ready("down")
    finally:
        pair.standby.start()
    wait_until(lambda: pair.ready()[1].get("readReplica") == "ok")
    served = pair.replica_reads()
    pair.post_visit()

    def replica_answered() -> bool:  # each worker leaves a replica it found down alone 5 s
        assert pair.totals()["totals"] == [pair.posted, 2 * pair.posted]
        return pair.replica_reads() > served

    wait_until(replica_answered)


def test_a_recovery_conflict_hands_the_read_to_the_primary(pair: Pair):
    """The primary takes the mark's table in ACCESS EXCLUSIVE mode, again and again: replaying
    that lock cancels a standby read that holds the table (every read does, from its first
    statement), at once (max_standby_streaming_delay 0)."""
    stop = threading.Event()

    def lock_again_and_again() -> None:
        connection = psycopg2.connect(pair.primary.url)
        try:
            while not stop.is_set():
                with connection, connection.cursor() as cursor:
                    cursor.execute("LOCK TABLE rollup_mark IN ACCESS EXCLUSIVE MODE")
                    cursor.execute("SELECT pg_sleep(0.002)")
                time.sleep(0.002)
        finally:
            connection.close()

    locker = threading.Thread(target=lock_again_and_again)
    conflicts = pair.fallbacks("conflict")
    locker.start()
    try:
        deadline = time.monotonic() + 60
        while pair.fallbacks("conflict") == conflicts and time.monotonic() < deadline:
            pair.post_visit()
            assert pair.totals(dimensions=["time:day"])["totals"] == [pair.posted,
                                                                      2 * pair.posted]
    finally:
        stop.set()
        locker.join(timeout=30)
    assert pair.fallbacks("conflict") > conflicts
    assert "read replica conflict, reading from the primary: " in pair.server.log()


def test_the_primary_alone_without_a_replica_url(pair: Pair, tmp_path: Path):
    """Without EGIS_READ_DATABASE_URL /readyz names no replica and the primary answers."""
    server = launch_server(pair.primary.url, tmp_path, workers=1)
    try:
        status, body = live_json(server.url, "/readyz")
        assert (status, body) == (200, {"status": "ready", "database": "up",
                                        "rateLimitStore": "up"})
        answer = live_tool(server.url, pair.site.server_key, "query", period="7d",
                           metrics=["visits"])
        assert answer["structuredContent"]["totals"] == [pair.posted]
    finally:
        stop_server(server)
