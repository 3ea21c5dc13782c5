"""What the OAuth tests share: a throwaway certificate authority and an HTTPS server of client
metadata documents, a client's callback server, one live egis per module that trusts that CA,
and the steps of the flow over plain HTTP (the consent form posted as a browser posts it).

The live server (deploy/gunicorn.conf.py, 2 workers) runs with EGIS_OAUTH_PRIVATE_CLIENT_URLS=1
(the documents are served on 127.0.0.1) and SSL_CERT_FILE naming the test CA, as an operator of
a private network would run it. Its workers keep the installation's secrets (the consent form's
signing key) from one test to the next, as production does: `kept_secrets` puts the rows back
that the emptying of the tables after each test removes.
"""
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from app.oauth import fetches
from models import InstanceSecret, database
from tests.fixtures.oauth import (
    _SECRETS_OF_LIVE_SERVERS,
    LOOPBACK_HOSTS,
    Agent,
    Callback,
    Certificates,
    DocumentServer,
    agents,
    make_certificates,
)
from tests.fixtures.servers import IN_REQUEST, LiveServer, launch_server, stop_server


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("tls"),
                             addresses=("127.0.0.1", *LOOPBACK_HOSTS))


@pytest.fixture(autouse=True)
def no_failure_remembered() -> Iterator[None]:
    """Each test starts with no failed fetch remembered in this process (app.oauth.fetches keeps
    them a minute)."""
    fetches.failed_hosts.forget_all()
    fetches.failed_urls.forget_all()
    yield


@pytest.fixture
def trusted(monkeypatch: pytest.MonkeyPatch, certificates: Certificates) -> None:
    """This process trusts the test CA, as the live server does (SSL_CERT_FILE)."""
    monkeypatch.setenv("SSL_CERT_FILE", str(certificates.ca))


@pytest.fixture(scope="module")
def document_server(certificates: Certificates) -> Iterator[DocumentServer]:
    server = DocumentServer(certificates)
    yield server
    server.stop()


@pytest.fixture
def callback() -> Iterator[Callback]:
    server = Callback()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def live_oauth(migrated: str, tmp_path_factory: pytest.TempPathFactory,
               certificates: Certificates) -> Iterator[LiveServer]:
    """egis as deployed (gunicorn.conf.py, 2 workers), trusting the test CA and allowing client
    metadata documents on private addresses."""
    server = launch_server(migrated, tmp_path_factory.mktemp("egis"), workers=2,
                           deploy_config=True, env={
                               "EGIS_OAUTH_PRIVATE_CLIENT_URLS": "1",
                               "SSL_CERT_FILE": str(certificates.ca),
                               "GUNICORN_ACCESSLOG": "-", **IN_REQUEST})
    yield server
    stop_server(server)


@pytest.fixture
def kept_secrets(app: Any) -> Iterator[None]:
    """The installation's secrets kept from one test to the next (see the module's docstring);
    set up after `app`, so that its teardown reads them before the tables are emptied."""
    with database.connection_context():
        if _SECRETS_OF_LIVE_SERVERS:
            InstanceSecret.insert_many(_SECRETS_OF_LIVE_SERVERS).on_conflict_ignore().execute()
    yield
    with database.connection_context():
        _SECRETS_OF_LIVE_SERVERS[:] = list(InstanceSecret.select(
            InstanceSecret.name, InstanceSecret.value).dicts())


@pytest.fixture
def egis(live_oauth: LiveServer, kept_secrets: None, live_day_salts: None) -> LiveServer:
    return live_oauth


@pytest.fixture
def agent(egis: LiveServer) -> Iterator[Callable[..., Agent]]:
    """Agents of the live server."""
    yield from agents(egis.url)
