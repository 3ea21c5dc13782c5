"""What the benchmarks share: the PostgreSQL server they make their throwaway databases on
(EGIS_BENCH_PG_ADMIN_URL, default postgres on 127.0.0.1:5432, trust), and free local ports for
the servers they start."""
import os
import socket

import psycopg2

ADMIN_URL = os.environ.get("EGIS_BENCH_PG_ADMIN_URL",
                           "postgresql://postgres@127.0.0.1:5432/postgres")


def database_url(name: str) -> str:
    return ADMIN_URL.rsplit("/", 1)[0] + "/" + name


def run_database(purpose: str) -> str:
    """The name of this run's own database for `purpose`, `egis_<purpose>_<pid>`: two runs on
    one PostgreSQL server, one person's or two people's, never share one. The run drops it."""
    return f"egis_{purpose}_{os.getpid()}"


def free_ports(count: int) -> list[int]:
    """`count` distinct TCP ports that nothing listens on at 127.0.0.1 now: a fixed port would
    collide with whatever else runs on the machine, another benchmark included."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def admin(sql: str) -> None:
    """Run `sql` on the server's maintenance database (CREATE / DROP DATABASE)."""
    connection = psycopg2.connect(ADMIN_URL)
    connection.autocommit = True
    try:
        connection.cursor().execute(sql)
    finally:
        connection.close()
