"""The benchmarks' databases: the PostgreSQL server they make their throwaway databases on
(EGIS_BENCH_PG_ADMIN_URL, default postgres on 127.0.0.1:5432, trust), a bench site in one, and
the events stored there."""
import os
from pathlib import Path

import psycopg2

from bench.harness import ROOT
from bench.harness.servers import flask

ADMIN_URL = os.environ.get("EGIS_BENCH_PG_ADMIN_URL",
                           "postgresql://postgres@127.0.0.1:5432/postgres")


def database_url(name: str) -> str:
    return ADMIN_URL.rsplit("/", 1)[0] + "/" + name


def run_database(purpose: str) -> str:
    """The name of this run's own database for `purpose`, `egis_<purpose>_<pid>`: two runs on
    one PostgreSQL server, one person's or two people's, never share one. The run drops it."""
    return f"egis_{purpose}_{os.getpid()}"


def admin(sql: str) -> None:
    """Run `sql` on the server's maintenance database (CREATE / DROP DATABASE)."""
    connection = psycopg2.connect(ADMIN_URL)
    connection.autocommit = True
    try:
        connection.cursor().execute(sql)
    finally:
        connection.close()


def stored_events(url: str) -> int:
    connection = psycopg2.connect(url)
    cursor = connection.cursor()
    cursor.execute("SELECT count(*) FROM event")
    (count,) = cursor.fetchone()
    connection.close()
    return count


def create_bench_site(db_name: str, env: dict[str, str], commit_delay: int = 0,
                      root: Path = ROOT) -> str:
    """A fresh database `db_name`, migrated by the tree at `root`, with a pro site and no quota
    in reach; its write key."""
    admin(f"DROP DATABASE IF EXISTS {db_name} WITH (FORCE)")
    admin(f"CREATE DATABASE {db_name}")
    if commit_delay:
        admin(f"ALTER DATABASE {db_name} SET commit_delay = {commit_delay}")
        admin(f"ALTER DATABASE {db_name} SET commit_siblings = 1")
    flask("db", "upgrade", env=env, root=root)
    flask("sites", "create", "bench.example", "--plan", "pro", "--monthly-quota", "2000000000",
          env=env, root=root)
    return flask("keys", "create", "bench.example", "--kind", "write", env=env,
                 root=root).splitlines()[-1]
