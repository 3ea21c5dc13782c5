"""egis on a PostgreSQL cluster kept available by Patroni (tests/fixtures/patroni.py: 3 etcd
members, 3 nodes in synchronous_mode, HAProxy's write address on /primary), under a steady
ingest load through a live server: a thread posts batches and resends any that is not answered
200 (same batch id) until it is. For each failure of the leader's, the sync standby's or
etcd's: every batch is stored once (the acknowledged ones and the resent ones alike), every
answer is 200 or 503, no request outlasts the deadline, and ingest is back within the leader
key's ttl plus a few seconds. One cluster serves the module; `heal` makes it whole between
cases.
"""
import http.client
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import orjson
import psycopg2
import pytest

from tests.fixtures.cluster import migrated_site, sql_rows
from tests.fixtures.database import BACKEND, SiteKeys
from tests.fixtures.load import Load
from tests.fixtures.patroni import Node, PatroniCluster, missing_binaries, wait_until
from tests.fixtures.rollups import live_tool
from tests.fixtures.servers import IN_REQUEST, LiveServer, launch_server, stop_server
from tests.fixtures.tracking import batch

MISSING = missing_binaries()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(BACKEND == "sqlite", reason="a PostgreSQL cluster"),
    pytest.mark.skipif(bool(MISSING), reason="Debian's cluster packages are not installed: "
                                              + ", ".join(MISSING)),
]

TTL = 10  # deploy/cluster/patroni.yml's leader key
DEADLINE = 5  # EGIS_REQUEST_DEADLINE_SECONDS here
SLACK = 2.0  # a request's own work past the deadline on a loaded 2-core machine
BACK_WITHIN = TTL + 8  # the longest ingest may answer nothing but 503 after a failure


@dataclass
class Setup:
    cluster: PatroniCluster
    server: LiveServer
    site: SiteKeys

    def stored(self, prefix: str) -> dict[str, tuple[int, int]]:
        """batch id -> (batch rows, event rows) of the batches under `prefix`."""
        connection = psycopg2.connect(self.cluster.url, connect_timeout=5)
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT b.batch_key, count(DISTINCT b.id), count(e.id) FROM batch b "
                               "LEFT JOIN event e ON e.batch_id = b.id "
                               "WHERE b.batch_key LIKE %s GROUP BY b.batch_key", (f"{prefix}-%",))
                return {key: (batches, events) for key, batches, events in cursor.fetchall()}
        finally:
            connection.close()

    def load(self, prefix: str) -> Load:
        return Load(self.server.url, self.site, prefix, DEADLINE + 30).start()

    def check(self, load: Load) -> None:
        """The contract under a failure, once the load has stopped and the cluster healed."""
        statuses = {answer.status for answer in load.answers}
        assert statuses <= {200, 503}, (statuses, self.server.log()[-3000:])
        slowest = max(answer.seconds for answer in load.answers)
        assert slowest < DEADLINE + SLACK, f"a request took {slowest:.1f} s"
        stored = self.stored(load.prefix)
        assert set(stored) == set(load.sent), set(load.sent) ^ set(stored)
        assert set(stored.values()) == {(1, 2)}, {k: v for k, v in stored.items() if v != (1, 2)}
        outage = load.longest_outage()
        assert outage < BACK_WITHIN, f"ingest answered no 200 for {outage:.1f} s"


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    cluster = PatroniCluster.build()
    server = None
    try:
        site = migrated_site(cluster.url)
        server = launch_server(cluster.url, tmp_path_factory.mktemp("cluster"), workers=2,
                               env={**IN_REQUEST,
                                    "EGIS_REQUEST_DEADLINE_SECONDS": str(DEADLINE),
                                    "EGIS_READ_DATABASE_URL": cluster.read_url})
        yield Setup(cluster, server, site)
    finally:
        if server is not None:
            stop_server(server)
        cluster.destroy()


@pytest.fixture
def whole(setup: Setup) -> Iterator[Setup]:
    """The cluster whole before the case, and healed after it."""
    setup.cluster.heal()
    yield setup
    setup.cluster.heal()


def _leader(setup: Setup) -> Node:
    leader = setup.cluster.leader()
    assert leader is not None
    return leader


def _through_failure(setup: Setup, prefix: str, fail, recovered=None) -> Load:
    """The load running while `fail()` happens, until ingest is back (200s after it) and
    `recovered()` holds; the load stopped, the cluster healed."""
    load = setup.load(prefix)
    time.sleep(1)
    failed_at = time.monotonic()
    fail()
    wait_until(lambda: load.ok_after(failed_at + 1) and (recovered is None or recovered()),
               BACK_WITHIN + 30, "ingest to be back")
    time.sleep(1)
    load.stop()
    setup.cluster.heal()
    return load


def test_a_leader_node_lost(whole: Setup):
    leader = _leader(whole)
    load = _through_failure(
        whole, "node", lambda: whole.cluster.kill_node(leader),
        recovered=lambda: (whole.cluster.leader() or leader) is not leader)
    whole.check(load)


def test_c_leader_patroni_lost_zombie_primary(whole: Setup):
    leader = _leader(whole)
    load = whole.load("zombie")
    time.sleep(1)
    failed_at = time.monotonic()
    whole.cluster.kill_patroni(leader)
    wait_until(lambda: load.ok_after(failed_at + 1)
               and (whole.cluster.leader() or leader) is not leader, BACK_WITHIN + 30,
               "ingest to be back on a new leader")
    time.sleep(1)
    load.stop()
    whole.cluster.heal()
    whole.check(load)
    # Its Patroni back, the old leader demoted its postgres and rejoined as a replica.
    members = {m["name"]: m for m in whole.cluster.members()}
    assert members[leader.name]["role"] in ("replica", "sync_standby")


def test_d_a_commit_whose_answer_is_lost_is_a_duplicate(whole: Setup):
    leader = _leader(whole)
    load = whole.load("lost")
    body = batch(2, id="lost-answer")
    host, port = whole.server.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=DEADLINE + 30)
    connection.request("POST", "/api/events", body=orjson.dumps(body),
                       headers={"Content-Type": "application/json",
                                **whole.site.write_headers()})
    # Stored (committed on the leader and, synchronously, on a standby), and then the leader
    # is lost before the client read the answer.
    wait_until(lambda: "lost-answer" in _batch_keys_on(leader, "lost-answer"), 10,
               "the batch committed")
    whole.cluster.kill_node(leader)
    connection.close()
    load.sent.append(body["id"])
    answer = load.send_until_stored(body)
    assert answer.duplicate, "the resent batch was stored again"
    wait_until(lambda: load.ok_after(answer.at), 30, "ingest to be back")
    load.stop()
    whole.cluster.heal()
    whole.check(load)


def _batch_keys_on(node: Node, key: str) -> set[str]:
    try:
        connection = psycopg2.connect(node.url, connect_timeout=2)
    except psycopg2.Error:
        return set()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT batch_key FROM batch WHERE batch_key = %s", (key,))
            return {row[0] for row in cursor.fetchall()}
    finally:
        connection.close()


def _notes(node: Node) -> list[str]:
    return [row[0] for row in sql_rows(node.url, "SELECT note FROM rewind_note ORDER BY note")]


def _timeline(node: Node) -> int | None:
    """The timeline a primary writes on, or the one a standby receives (None: not streaming)."""
    found = sql_rows(node.url, "SELECT CASE WHEN pg_is_in_recovery() THEN (SELECT received_tli "
                           "FROM pg_stat_wal_receiver) ELSE ('x' || substr(pg_walfile_name("
                           "pg_current_wal_lsn()), 1, 8))::bit(32)::int END")
    return found[0][0]


def test_g_the_old_leader_rejoins_through_pg_rewind(whole: Setup):
    leader = _leader(whole)
    sql_rows(whole.cluster.url, "CREATE TABLE IF NOT EXISTS rewind_note (note text)")
    load = whole.load("rewind")
    time.sleep(1)
    failed_at = time.monotonic()
    whole.cluster.kill_patroni(leader)
    new_leader = wait_until(lambda: (found := whole.cluster.leader()) not in (None, leader)
                            and found, BACK_WITHIN + 30, "a new leader")
    # Patroni names itself leader before its postgres is promoted; until then it still streams
    # from the zombie.
    wait_until(lambda: sql_rows(new_leader.url, "SELECT NOT pg_is_in_recovery()")[0][0], 30,
               "the new leader promoted")
    # A client past HAProxy writes on the zombie after the failover: committed there alone
    # (its standbys follow the new leader), WAL the new timeline never had.
    sql_rows(leader.url,
             "SET synchronous_commit = local; INSERT INTO rewind_note VALUES ('zombie')")
    assert _notes(leader) == ["zombie"] and _notes(new_leader) == []
    whole.cluster.stop_postgres(leader)  # and then the old leader's machine goes down
    wait_until(lambda: load.ok_after(failed_at + 1), BACK_WITHIN + 30, "ingest to be back")
    time.sleep(1)
    load.stop()
    rewinds = leader.log.read_text(errors="replace").count("pg_rewind")
    whole.cluster.heal()
    # Back as a replica of the new timeline: Patroni rewound it, and its own write is gone.
    members = {m["name"]: m for m in whole.cluster.members()}
    assert members[leader.name]["role"] in ("replica", "sync_standby")
    assert leader.log.read_text(errors="replace").count("pg_rewind") > rewinds, \
        whole.cluster.logs()
    assert _notes(leader) == [] and _notes(new_leader) == []
    timeline = _timeline(new_leader)
    assert timeline > 1
    wait_until(lambda: _timeline(leader) == timeline, 30, "the old leader on the new timeline")
    whole.check(load)


def test_b_leader_postmaster_lost(whole: Setup):
    leader = _leader(whole)
    started = leader.postmaster_pid()
    load = _through_failure(
        whole, "postmaster", lambda: whole.cluster.kill_postmaster(leader),
        recovered=lambda: leader.postmaster_pid() not in (None, started))
    whole.check(load)


def test_e_sync_standby_lost(whole: Setup):
    standby = whole.cluster.sync_standby()
    assert standby is not None
    load = _through_failure(
        whole, "standby", lambda: whole.cluster.kill_node(standby),
        recovered=lambda: (whole.cluster.sync_standby() or standby) is not standby)
    whole.check(load)


def test_f_etcd_quorum_lost(whole: Setup):
    leader = _leader(whole)
    load = whole.load("quorum")
    time.sleep(1)
    lost_at = time.monotonic()
    whole.cluster.kill_etcd_quorum()
    # The leader cannot renew its key: it demotes itself, and ingest answers 503 meanwhile.
    wait_until(lambda: leader.rest("/primary")[0] != 200, TTL + 15, "the leader to demote")
    wait_until(lambda: any(a.status == 503 and a.at > lost_at for a in load.answers), 20,
               "a 503 while no node leads")
    healed_at = time.monotonic()
    whole.cluster.heal()
    wait_until(lambda: load.ok_after(healed_at), BACK_WITHIN + 30, "ingest to be back")
    load.stop()
    statuses = {answer.status for answer in load.answers}
    assert statuses <= {200, 503}, (statuses, whole.server.log()[-3000:])
    slowest = max(answer.seconds for answer in load.answers)
    assert slowest < DEADLINE + SLACK, f"a request took {slowest:.1f} s"
    stored = whole.stored(load.prefix)
    assert set(stored) == set(load.sent)
    assert set(stored.values()) == {(1, 2)}


@dataclass
class Reads:
    """A thread calling the `query` tool (read on the replica, HAProxy's /replica) in a loop."""
    url: str
    site: SiteKeys
    results: list[tuple[float, str]] = field(default_factory=list)  # (when, "ok" or the error)
    stopping: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                found = live_tool(self.url, self.site.server_key, "query", timeout=60,
                                  period="7d", metrics=["pageviews"])
                outcome = "ok" if "structuredContent" in found else repr(found)[:300]
            except Exception as error:  # any failure is what the test reports
                outcome = f"{type(error).__name__}: {error}"[:300]
            self.results.append((time.monotonic(), outcome))
            time.sleep(0.05)


def test_h_replica_reads_through_a_failover_never_fail(whole: Setup):
    leader = _leader(whole)
    reads = Reads(whole.server.url, whole.site)
    reader = threading.Thread(target=reads.run, daemon=True)
    reader.start()
    load = whole.load("reads")
    wait_until(lambda: len(reads.results) >= 3, 30, "the first reads")
    failed_at = time.monotonic()
    whole.cluster.kill_node(leader)
    wait_until(lambda: load.ok_after(failed_at + 1)
               and any(at > failed_at + 1 for at, _ in reads.results)
               and (whole.cluster.leader() or leader) is not leader, BACK_WITHIN + 30,
               "ingest and reads after the failover")
    time.sleep(2)
    reads.stopping.set()
    reader.join(timeout=90)
    load.stop()
    whole.cluster.heal()
    failures = [outcome for _, outcome in reads.results if outcome != "ok"]
    assert not failures, failures[:5]
    assert any(at > failed_at for at, _ in reads.results)
    whole.check(load)
