"""DATABASE_URL for a cluster (app.storage.db): libpq's multi-host URL in its query form
(`?host=h1,h2&port=p1,p2&target_session_attrs=read-write`) connects to the first host that
answers and takes writes; its netloc form (`h1:p1,h2:p2`) is refused at start with one
sentence, not a traceback; egis's timeouts reach the server without startup `options` (a SET
after connecting)."""
import os
import subprocess
import sys
from urllib.parse import urlsplit

import pytest

from app.storage.db import STATEMENT_MILLISECONDS, make_database
from tests.fixtures import ROOT
from tests.fixtures.database import BACKEND, PG_ADMIN_URL
from tests.fixtures.servers import free_port

pytestmark = pytest.mark.skipif(BACKEND == "sqlite", reason="PostgreSQL URLs")

SHARED = urlsplit(PG_ADMIN_URL)


def _query_form(*ports: int) -> str:
    hosts = ",".join(SHARED.hostname for _ in ports)
    user = f"{SHARED.username}:{SHARED.password}@" if SHARED.password else f"{SHARED.username}@"
    return (f"postgresql://{user}/postgres?host={hosts}&port={','.join(map(str, ports))}"
            "&target_session_attrs=read-write")


def _server(url: str) -> tuple[int, str, str]:
    """(the server's port, statement_timeout, idle_in_transaction_session_timeout) as a
    connection of egis's pool for `url` sees them."""
    pool = make_database(url, connect_timeout=2)
    pool.connect()
    try:
        return pool.execute_sql("SELECT inet_server_port(), current_setting('statement_timeout'), "
                                "current_setting('idle_in_transaction_session_timeout')"
                                ).fetchone()
    finally:
        pool.close()
        pool.close_all()


def test_the_query_form_reaches_the_host_that_answers():
    port = SHARED.port or 5432
    assert _server(_query_form(port))[0] == port
    # A first host where nothing listens: libpq goes on to the next one.
    found_port, statement, idle = _server(_query_form(free_port(), port))
    assert found_port == port
    assert statement == f"{STATEMENT_MILLISECONDS // 1000}s"
    assert idle == "30s"


def _start(url: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "import wsgi"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "DATABASE_URL": url})


def test_the_netloc_form_is_refused_at_start_with_one_sentence():
    port = SHARED.port or 5432
    started = _start(_query_form(free_port(), port))
    assert started.returncode == 0, started.stderr

    netloc = f"postgresql://{SHARED.username}@{SHARED.hostname}:{free_port()},{SHARED.hostname}:{port}/postgres"
    refused = _start(netloc)
    assert refused.returncode == 1
    assert "Traceback" not in refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert lines == [lines[0]] and "in its query" in lines[0] and "host=h1,h2,h3" in lines[0]
