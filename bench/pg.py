"""What the benchmarks share: the PostgreSQL server they make their throwaway databases on
(EGIS_BENCH_PG_ADMIN_URL, default postgres on 127.0.0.1:5432, trust)."""
import os

import psycopg2

ADMIN_URL = os.environ.get("EGIS_BENCH_PG_ADMIN_URL",
                           "postgresql://postgres@127.0.0.1:5432/postgres")


def database_url(name: str) -> str:
    return ADMIN_URL.rsplit("/", 1)[0] + "/" + name


def admin(sql: str) -> None:
    """Run `sql` on the server's maintenance database (CREATE / DROP DATABASE)."""
    connection = psycopg2.connect(ADMIN_URL)
    connection.autocommit = True
    try:
        connection.cursor().execute(sql)
    finally:
        connection.close()
