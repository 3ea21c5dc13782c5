"""Test fixtures: a real database per session (PostgreSQL by default, SQLite on request).

EGIS_TEST_DB=postgres (default) creates a fresh database `egis_test_<pid>` through
EGIS_TEST_PG_ADMIN_URL (default postgresql://postgres@127.0.0.1:5432/postgres) and drops it at
the end; EGIS_TEST_DB=sqlite uses a temporary file. Every test starts from empty tables.

The tests that start a real server start gunicorn, or granian with EGIS_TEST_WSGI=granian
(`launch_server`, `start_server`).
"""
import http.client
import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg2
import pytest
import redis
from peewee import AutoField

from app import create_app
from app.access import keys
from app.cli import upgrade_schema
from app.storage.db import make_database, release_connections
from models import ALL_MODELS, Site, VisitorSalt, database
from models.api_key import READ, SERVER, WRITE

ROOT = Path(__file__).resolve().parent.parent
BACKEND = os.environ.get("EGIS_TEST_DB", "postgres")
REDIS_URL = "redis://127.0.0.1:6379"  # the machine's shared Redis
PG_ADMIN_URL = os.environ.get("EGIS_TEST_PG_ADMIN_URL",
                              "postgresql://postgres@127.0.0.1:5432/postgres")
WSGI_SERVER = os.environ.get("EGIS_TEST_WSGI", "gunicorn")
if WSGI_SERVER not in ("gunicorn", "granian"):
    raise pytest.UsageError(f"EGIS_TEST_WSGI={WSGI_SERVER}: use gunicorn or granian")


def pytest_report_header(config: pytest.Config) -> str:
    return f"egis test database backend: {BACKEND}; live servers: {WSGI_SERVER}"


def _admin(sql: str) -> None:
    connection = psycopg2.connect(PG_ADMIN_URL)
    connection.autocommit = True
    try:
        connection.cursor().execute(sql)
    finally:
        connection.close()


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


def truncate_all() -> None:
    with database.connection_context():
        tables = [model._meta.table_name for model in ALL_MODELS]
        if BACKEND == "sqlite":
            for table in reversed(tables):
                database.execute_sql(f'DELETE FROM "{table}"')
        else:
            # DELETE and a sequence reset: on these few rows, ~1 ms where TRUNCATE takes 25-100.
            deletes = "".join(f'DELETE FROM "{table}";' for table in reversed(tables))
            resets = ", ".join(f"setval(pg_get_serial_sequence('\"{model._meta.table_name}\"', "
                               "'id'), 1, false)" for model in ALL_MODELS
                               if isinstance(model._meta.primary_key, AutoField))
            database.execute_sql(f"{deletes} SELECT {resets}")


@pytest.fixture
def make_app(migrated: str) -> Iterator[Callable[..., Any]]:
    """Build an app on the test database; keyword overrides become config."""

    def build(**overrides: Any):
        # Tallies written and rollups merged at once, so that a test reads them right after its
        # request; the deferred way the service runs by default has tests of its own
        # (tests/test_tally.py, tests/rollups/).
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


@dataclass
class SiteKeys:
    site: Site
    write_key: str
    server_key: str
    read_key: str

    def write_headers(self, **extra: str) -> dict[str, str]:
        return {"X-API-Key": self.write_key, **extra}

    def server_headers(self, **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.server_key}", **extra}


@pytest.fixture
def make_site(app) -> Callable[..., SiteKeys]:
    """Create a site with one write, one server and one read key, as `flask sites/keys create`
    would."""

    def create(domain: str = "std.example", plan: str = "standard",
               monthly_quota: int | None = None) -> SiteKeys:
        return create_site(app, domain, plan, monthly_quota)

    return create


def create_site(app, domain: str, plan: str, monthly_quota: int | None = None) -> SiteKeys:
    with app.app_context(), database.connection_context():
        site = Site.create(domain=domain, plan=plan, monthly_quota=monthly_quota)
        write = keys.issue(site, WRITE, app.config["WRITE_KEY_PREFIX"]).key
        server = keys.issue(site, SERVER, app.config["SERVER_KEY_PREFIX"]).key
        read = keys.issue(site, READ, app.config["READ_KEY_PREFIX"]).key
    return SiteKeys(site, write, server, read)


@pytest.fixture
def std_site(make_site) -> SiteKeys:
    return make_site("std.example", "standard")


@pytest.fixture
def free_site(make_site) -> SiteKeys:
    return make_site("free.example", "free")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LiveServer:
    url: str
    process: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def server_command(port: int, workers: int, deploy_config: bool) -> list[str]:
    """EGIS_TEST_WSGI's server on 127.0.0.1:`port` serving wsgi:app, access log on, everything
    to stdout. `deploy_config`: as deployed (deploy/gunicorn.conf.py, deploy/granian_server.py)."""
    if WSGI_SERVER == "gunicorn":
        config = ["-c", str(ROOT / "deploy" / "gunicorn.conf.py")] if deploy_config else []
        return [sys.executable, "-m", "gunicorn", *config, "-w", str(workers), "-b",
                f"127.0.0.1:{port}", "--access-logfile", "-", "--error-logfile", "-",
                "--no-control-socket", "wsgi:app"]
    options = ["--workers", str(workers), "--host", "127.0.0.1", "--port", str(port),
               "--access-log"]
    if deploy_config:
        return [sys.executable, str(ROOT / "deploy" / "granian_server.py"), *options]
    # One app thread per worker, like gunicorn's default sync workers.
    return [sys.executable, "-m", "granian", "--interface", "wsgi", "--blocking-threads", "1",
            *options, "wsgi:app"]


class UnixSocketConnection(http.client.HTTPConnection):
    """HTTP to a server bound to a Unix socket."""

    def __init__(self, path: Path, timeout: float = 10) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = str(path)

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.socket_path)


def answers_health_check(url: str, unix_socket: Path | None) -> bool:
    """Whether the server at `url` (or on `unix_socket`) answers GET /healthz."""
    try:
        if unix_socket is None:
            with urllib.request.urlopen(f"{url}/healthz", timeout=1):
                return True
        connection = UnixSocketConnection(unix_socket, timeout=1)
        try:
            connection.request("GET", "/healthz")
            return connection.getresponse().status == 200
        finally:
            connection.close()
    except OSError:
        return False


def launch(command: list[str], port: int | None, database_url: str, log_path: Path,
           env: dict[str, str] | None = None, granian_workers: int = 0,
           unix_socket: Path | None = None) -> LiveServer:
    """Run `command` (a server on 127.0.0.1:`port`, or bound to `unix_socket`) from the
    repository root on `database_url`, its output in `log_path`, and wait until it answers
    (and, for granian, until its log says that `granian_workers` workers have started); the
    caller stops it (`stop_server`)."""
    process_env = {**os.environ, "DATABASE_URL": database_url, **(env or {})}
    with log_path.open("wb") as log_file:  # the child keeps its own descriptor
        process = subprocess.Popen(command, cwd=ROOT, env=process_env, stdout=log_file,
                                   stderr=subprocess.STDOUT)
    url = f"unix:{unix_socket}" if unix_socket is not None else f"http://127.0.0.1:{port}"
    server = LiveServer(url, process, log_path)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        # granian answers as soon as one worker has loaded the app; a worker still loading it
        # when the test ends would not hear the SIGTERM that stops the server.
        if (answers_health_check(url, unix_socket)
                and server.log().count("Started worker-") >= granian_workers):
            return server
        time.sleep(0.1)
    stop_server(server)
    raise RuntimeError(f"{' '.join(command)} did not start:\n{server.log()}")


def launch_server(database_url: str, log_dir: Path, workers: int = 2,
                  env: dict[str, str] | None = None, deploy_config: bool = False) -> LiveServer:
    """Start a real server (EGIS_TEST_WSGI's) on `database_url` and wait until it answers; the
    caller stops it (`stop_server`). `deploy_config`: as deployed."""
    port = free_port()
    return launch(server_command(port, workers, deploy_config), port,
                  database_url, log_dir / f"{WSGI_SERVER}-{port}.log", env,
                  granian_workers=workers if WSGI_SERVER == "granian" else 0)


def stop_server(server: LiveServer) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(timeout=10)


# For a live server that outlives its tests (one per module): each worker writes its tallies
# (app.runtime.tally) and merges the rollups in the request that stored the events, never on a timer
# (app.rollups.timer) after the test. `truncate_all` resets the id sequences: a timer's merge
# that read the largest id (30, say) before the tables were emptied and moved the mark there
# after would take the next test's events 1-29 for merged, and they would count in no visit.
IN_REQUEST = {"EGIS_TALLY_FLUSH_SECONDS": "0", "EGIS_ROLLUP_MERGE_SECONDS": "0"}

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
