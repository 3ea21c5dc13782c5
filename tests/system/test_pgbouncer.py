"""egis behind PgBouncer in transaction pooling (deploy/cluster/pgbouncer.ini, Debian's
pgbouncer 1.18), in front of a PostgreSQL of the test's own: egis connects (it sends no
startup `options`, which PgBouncer refuses), its timeouts reach the server connections
(deploy/SCALING.md's role-level setting, and egis's SET after connecting), and a live server
ingests through it, a resent batch stored once."""
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import psycopg2
import pytest

from app.storage.db import make_database
from tests.fixtures.cluster import Cluster, migrated_site
from tests.fixtures.database import BACKEND, SiteKeys
from tests.fixtures.helpers import race
from tests.fixtures.patroni import render, wait_until
from tests.fixtures.servers import IN_REQUEST, free_port, launch_server, stop_server
from tests.fixtures.tracking import batch, post_live

PGBOUNCER = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
pytestmark = [
    pytest.mark.skipif(BACKEND == "sqlite", reason="PgBouncer pools PostgreSQL connections"),
    pytest.mark.skipif(not Path(PGBOUNCER).exists(), reason="Debian's pgbouncer is not installed"),
]
# deploy/SCALING.md, "PgBouncer": the role carries egis's timeouts to every server connection.
ROLE_SETTINGS = ("ALTER ROLE postgres SET statement_timeout = '15s'",
                 "ALTER ROLE postgres SET idle_in_transaction_session_timeout = '30s'")


class Bouncer:
    site: SiteKeys

    def __init__(self, upstream: Cluster) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="egis-pgbouncer-"))
        self.port = free_port()
        (self.root / "users.txt").write_text('"postgres" ""\n')
        config = self.root / "pgbouncer.ini"
        config.write_text(render("pgbouncer.ini", {
            "DATABASE_NAME": "egis", "UPSTREAM_HOST": "127.0.0.1",
            "UPSTREAM_PORT": upstream.port, "BIND_HOST": "127.0.0.1", "LISTEN_PORT": self.port,
            "SOCKET_DIR": self.root, "AUTH_TYPE": "trust", "AUTH_FILE": self.root / "users.txt",
            "LOG_FILE": self.root / "pgbouncer.log"}))
        as_postgres: list[str] = []
        if os.geteuid() == 0:  # PgBouncer refuses to run as root
            owner = pwd.getpwnam("postgres")
            for path in (self.root, *self.root.iterdir()):
                os.chown(path, owner.pw_uid, owner.pw_gid)
            as_postgres = ["runuser", "-u", "postgres", "--"]
        self.process = subprocess.Popen([*as_postgres, PGBOUNCER, str(config)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        wait_until(self._answers, 15, "PgBouncer to answer")

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/egis"

    def _answers(self) -> bool:
        try:
            psycopg2.connect(self.url, connect_timeout=1).close()
        except psycopg2.Error:
            return False
        return True

    def stop(self) -> None:
        self.process.terminate()  # runuser passes it on to PgBouncer
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="module")
def bouncer() -> Iterator[Bouncer]:
    upstream = Cluster()
    bouncer = None
    try:
        upstream.start()
        admin = psycopg2.connect(upstream.url, connect_timeout=5)
        admin.autocommit = True
        with admin.cursor() as cursor:
            cursor.execute("CREATE DATABASE egis")
            for statement in ROLE_SETTINGS:
                cursor.execute(statement)
        admin.close()
        site = migrated_site(upstream.url_of("egis"))
        bouncer = Bouncer(upstream)
        bouncer.site = site
        yield bouncer
    finally:
        if bouncer is not None:
            bouncer.stop()
        upstream.destroy()


def test_startup_options_are_refused_by_pgbouncer_and_egis_sends_none(bouncer: Bouncer):
    with pytest.raises(psycopg2.OperationalError, match="unsupported startup parameter"):
        psycopg2.connect(bouncer.url, options="-c statement_timeout=15000", connect_timeout=3)
    pools = [make_database(bouncer.url, max_connections=4) for _ in range(3)]
    try:
        for pool in pools:  # three clients at once: three server connections
            pool.connect()
            pool.execute_sql("BEGIN")
        seen = {pool.execute_sql("SELECT current_setting('statement_timeout'), "
                                 "current_setting('idle_in_transaction_session_timeout')"
                                 ).fetchone() for pool in pools}
        assert seen == {("15s", "30s")}
    finally:
        for pool in pools:
            pool.execute_sql("ROLLBACK")
            pool.close()
            pool.close_all()


@pytest.mark.slow
def test_a_live_server_ingests_through_pgbouncer(bouncer: Bouncer, tmp_path: Path):
    site = bouncer.site
    server = launch_server(bouncer.url, tmp_path, workers=2, env=IN_REQUEST)
    try:
        bodies = [batch(2) for _ in range(40)]
        sending = bodies + bodies[:10]  # ten resent: stored once

        def send(index: int) -> int:
            return post_live(server.url, orjson.dumps(sending[index]), site.write_headers())[0]

        for start in range(0, len(sending), 10):  # 10 at a time, over several server connections
            statuses = race(10, lambda n, start=start: send(start + n))
            assert statuses == [200] * 10, (statuses, server.log()[-2000:])
        time.sleep(0.1)
        connection = psycopg2.connect(bouncer.url, connect_timeout=3)
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*), count(DISTINCT batch_key) FROM batch "
                           "WHERE batch_key = ANY(%s)", ([body["id"] for body in bodies],))
            assert cursor.fetchone() == (40, 40)
        connection.close()
    finally:
        stop_server(server)
