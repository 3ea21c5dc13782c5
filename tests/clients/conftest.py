"""A real egis for the client: gunicorn (EGIS_TEST_WSGI's server) on the test database, one
site with its keys; clients shut down after each test; a TCP proxy that can lose answers."""
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from egis_client import Client

from tests.fixtures.clients import Egis, LosingProxy, RestartableEgis
from tests.fixtures.database import create_site
from tests.fixtures.servers import IN_REQUEST, LiveServer, launch_server, stop_server


@pytest.fixture(scope="module")
def live_egis(migrated: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One server (2 workers) per test module, as tests/sdk has: a start costs ~1.5 s. Each test
    has a site and keys of its own (the tables are emptied after every test), and its clients
    are shut down before that; tallies are written and the rollups merged in the request
    (app.runtime.tally, IN_REQUEST), so nothing a test sent is written after its tables were
    emptied."""
    server = launch_server(migrated, tmp_path_factory.mktemp("egis"), workers=2,
                           env=IN_REQUEST)
    yield server
    stop_server(server)


@pytest.fixture
def egis(app, live_egis: LiveServer, live_day_salts: None) -> Egis:
    keys = create_site(app, "std.example", "standard")
    return Egis(app, keys, live_egis.url)


@pytest.fixture
def make_client(egis: Egis) -> Iterator[Callable[..., Client]]:
    """Clients of the test's site (options as Client's); shut down after the test."""
    made: list[Client] = []

    def make(**options: Any) -> Client:
        settings = {"host": egis.url, "write_key": egis.keys.write_key,
                    "server_key": egis.keys.server_key, "flush_interval": 0.05, **options}
        client = Client(**settings)
        made.append(client)
        return client

    yield make
    for client in made:
        client.shutdown(timeout=10)


@pytest.fixture
def restartable(migrated: str, tmp_path: Path, make_app) -> Iterator[RestartableEgis]:
    live = RestartableEgis(migrated, tmp_path)
    live.start()
    yield live
    live.stop()


@pytest.fixture
def proxy(egis: Egis) -> Iterator[LosingProxy]:
    losing = LosingProxy(int(egis.url.rsplit(":", 1)[1]))
    yield losing
    losing.close()
