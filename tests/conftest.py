"""Test fixtures: a real database per session (PostgreSQL by default, SQLite on request).

EGIS_TEST_DB=postgres (default) creates a fresh database `egis_test_<pid>` through
EGIS_TEST_PG_ADMIN_URL (default postgresql://postgres@127.0.0.1:5432/postgres) and drops it at
the end; EGIS_TEST_DB=sqlite uses a temporary file. Every test starts from empty tables.

The tests that start a real server start gunicorn, or granian with EGIS_TEST_WSGI=granian
(`launch_server`, `start_server`).
"""
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from app import create_app
from app.cli import upgrade_schema
from app.storage.db import make_database, release_connections
from models import VisitorSalt, database
from tests.fixtures.database import (
    BACKEND,
    PG_ADMIN_URL,
    REDIS_URL,
    SiteKeys,
    _admin,
    _postgres_reachable,
    create_site,
    truncate_all,
)
from tests.fixtures.servers import WSGI_SERVER, LiveServer, launch_server, stop_server

if WSGI_SERVER not in ("gunicorn", "granian"):
    raise pytest.UsageError(f"EGIS_TEST_WSGI={WSGI_SERVER}: use gunicorn or granian")


def pytest_report_header(config: pytest.Config) -> str:
    return f"egis test database backend: {BACKEND}; live servers: {WSGI_SERVER}"


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    """A key prefix of the test's own on the machine's shared Redis; its keys are deleted after
    (never FLUSHALL: the server is shared)."""
    prefix = f"egis-test-{uuid.uuid4().hex}"
    yield prefix
    connection = redis.Redis.from_url(REDIS_URL)
    for key in connection.scan_iter(f"*{prefix}*"):
        connection.delete(key)
    connection.close()


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if BACKEND == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('db') / 'egis.sqlite3'}"
        return
    name = f"egis_test_{os.getpid()}"
    _admin(f"DROP DATABASE IF EXISTS {name}")
    _admin(f"CREATE DATABASE {name}")
    base = PG_ADMIN_URL.rsplit("/", 1)[0]
    yield f"{base}/{name}"
    release_connections()
    _admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(scope="session")
def migrated(database_url: str) -> str:
    create_app({"DATABASE_URL": database_url})
    upgrade_schema()
    release_connections()
    return database_url


@pytest.fixture
def make_app(migrated: str) -> Iterator[Callable[..., Any]]:
    """Build an app on the test database; keyword overrides become config."""

    def build(**overrides: Any):
        # Tallies written and rollups merged at once, so that a test reads them right after its
        # request; the deferred way the service runs by default has tests of its own
        # (tests/runtime/test_tally.py, tests/rollups/).
        return create_app({"DATABASE_URL": migrated, "TESTING": True,
                           "TALLY_FLUSH_SECONDS": 0, "ROLLUP_MERGE_SECONDS": 0, **overrides})

    yield build
    release_connections()
    # A test may have built an app on another database (closed port, proxy, throwaway): the
    # models' handle is process-wide, so point it back at the test database before cleaning.
    database.initialize(make_database(migrated))
    truncate_all()
    release_connections()


@pytest.fixture
def app(make_app: Callable[..., Any]):
    return make_app()


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def make_site(app) -> Callable[..., SiteKeys]:
    """Create a site with one write, one server and one read key, as `flask sites/keys create`
    would."""

    def create(domain: str = "std.example", plan: str = "standard",
               monthly_quota: int | None = None) -> SiteKeys:
        return create_site(app, domain, plan, monthly_quota)

    return create


@pytest.fixture
def std_site(make_site) -> SiteKeys:
    return make_site("std.example", "standard")


@pytest.fixture
def free_site(make_site) -> SiteKeys:
    return make_site("free.example", "free")

_SALTS_OF_LIVE_SERVERS: list[dict[str, Any]] = []


@pytest.fixture
def live_day_salts(app: Any) -> Iterator[None]:
    """The day's salt kept from one test to the next, for tests on a live server that outlives
    them (one per module).

    Each worker keeps its copy of the day's salt (anonymous.DailySalt), while `truncate_all`
    empties visitor_salt after every test. A worker that cached the salt in an earlier test
    and one that reads the emptied table and makes a new one would derive two visitor ids for
    one browser. Production deletes a salt only 48 hours after its day began. Set up after
    `app` (and `make_app`), so its teardown reads the salts before `make_app` empties the
    tables."""
    if _SALTS_OF_LIVE_SERVERS:
        with database.connection_context():
            VisitorSalt.insert_many(_SALTS_OF_LIVE_SERVERS).on_conflict_ignore().execute()
    yield
    with database.connection_context():
        _SALTS_OF_LIVE_SERVERS[:] = list(VisitorSalt.select(VisitorSalt.day, VisitorSalt.value)
                                         .dicts())


@pytest.fixture
def start_server(migrated: str, tmp_path: Path, make_app: Callable[..., Any]
                 ) -> Iterator[Callable[..., LiveServer]]:
    """Start a real WSGI server on the test database (see `launch_server`); stopped by PID
    after the test, and before `make_app` empties the tables: a stopping worker writes the
    tallies it still holds (app.runtime.tally), which must not reach the next test."""
    started: list[LiveServer] = []

    def start(workers: int = 2, env: dict[str, str] | None = None,
              deploy_config: bool = False) -> LiveServer:
        server = launch_server(migrated, tmp_path, workers, env, deploy_config)
        started.append(server)
        return server

    yield start
    for server in started:
        stop_server(server)


@pytest.fixture(params=["postgres", "sqlite"])
def fresh_url(request, make_app, tmp_path):
    """A database with nothing in it (depends on make_app: its teardown re-binds the models)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'fresh.sqlite3'}"
        release_connections()
        return
    if BACKEND == "sqlite" and not _postgres_reachable():
        pytest.skip("no PostgreSQL server reachable at EGIS_TEST_PG_ADMIN_URL")
    name = f"egis_migrate_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    _admin(f"CREATE DATABASE {name}")
    try:
        yield f"{PG_ADMIN_URL.rsplit('/', 1)[0]}/{name}"
    finally:
        release_connections()
        _admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

