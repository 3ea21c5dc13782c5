"""What the OAuth tests share: a throwaway certificate authority and an HTTPS server of client
metadata documents, a client's callback server, one live egis per module that trusts that CA,
and the steps of the flow over plain HTTP (the consent form posted as a browser posts it).

The live server (deploy/gunicorn.conf.py, 2 workers) runs with EGIS_OAUTH_PRIVATE_CLIENT_URLS=1
(the documents are served on 127.0.0.1) and SSL_CERT_FILE naming the test CA, as an operator of
a private network would run it. Its workers keep the installation's secrets (the consent form's
signing key) from one test to the next, as production does: `kept_secrets` puts the rows back
that the emptying of the tables after each test removes.
"""
import base64
import contextlib
import datetime
import hashlib
import html
import re
import secrets
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from app.oauth import clients, connect_codes, fetches, grants, registration
from app.retention import prune
from models import InstanceSecret, database
from models.site import utcnow
from tests.conftest import IN_REQUEST, LiveServer, launch_server, stop_server

REDIRECT_PATH = "/callback"


# --- TLS: a CA of the test's own ---------------------------------------------------------------

@dataclass(frozen=True)
class Certificates:
    ca: Path  # the CA's certificate: what a client trusts
    chain: Path  # the server's certificate
    key: Path

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.chain, self.key)
        return context


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def make_certificates(directory: Path, hosts: tuple[str, ...] = ("localhost", "client.test"),
                      addresses: tuple[str, ...] = ("127.0.0.1",)) -> Certificates:
    """A CA and a server certificate it signs, for `hosts` and `addresses`."""
    import ipaddress

    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("egis test CA")).issuer_name(
        _name("egis test CA")).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                       critical=False)
        .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.DNSName(host) for host in hosts] + [
        x509.IPAddress(ipaddress.ip_address(address)) for address in addresses]
    leaf = (x509.CertificateBuilder().subject_name(_name(hosts[0])).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = Certificates(directory / "ca.pem", directory / "server.pem", directory / "server.key")
    paths.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths.chain.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    paths.key.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                            serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption()))
    return paths


# --- Servers the tests run: documents over HTTPS, a client's callback -------------------------

@dataclass
class Answer:
    body: bytes
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})
    delay: float = 0.0  # seconds before the body is sent


class DocumentServer:
    """HTTPS on 127.0.0.1 with the test CA's certificate: each path answers what `answers`
    holds; `hits` counts the requests per path."""

    def __init__(self, certificates: Certificates) -> None:
        self.answers: dict[str, Answer] = {}
        self.hits: dict[str, int] = {}
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:
                pass

            def do_GET(self) -> None:
                owner.hits[self.path] = owner.hits.get(self.path, 0) + 1
                answer = owner.answers.get(self.path, Answer(b"{}", 404))
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                if answer.delay:
                    time.sleep(answer.delay)
                self.wfile.write(answer.body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.socket = certificates.server_context().wrap_socket(self.server.socket,
                                                                       server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"https://{host}:{self.port}{path}"

    def serve_client(self, path: str, redirect_uris: list[str], name: str = "Document client",
                     **extra: Any) -> str:
        """A metadata document at `path`; its URL, which is the client_id."""
        import orjson

        url = self.url(path)
        self.answers[path] = Answer(orjson.dumps({
            "client_id": url, "client_name": name, "redirect_uris": redirect_uris,
            "token_endpoint_auth_method": "none", **extra}))
        return url

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Callback:
    """The client's redirect URI on 127.0.0.1: remembers the query of each request to it."""

    def __init__(self) -> None:
        self.received: list[dict[str, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:
                pass

            def do_GET(self) -> None:
                asked = urlsplit(self.path)
                if asked.path == REDIRECT_PATH:  # not a browser's /favicon.ico
                    query = parse_qs(asked.query)
                    owner.received.append({name: values[0] for name, values in query.items()})
                body = b"<!doctype html><title>Back in the app</title><p>Done.</p>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{REDIRECT_PATH}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, timeout: float = 10) -> dict[str, str]:
        deadline = time.monotonic() + timeout
        while not self.received and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.received, "the browser never came back to the client's redirect URI"
        return self.received[-1]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# --- Servers that stall: what a hostile client's URL may name ----------------------------------

# Hosts of their own on this machine: Linux routes all of 127.0.0.0/8 to the loopback interface.
LOOPBACK_HOSTS = tuple(f"127.0.0.{number}" for number in range(2, 42))
# What a stalling server would take a minute to send, a byte a second.
TRICKLED_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 b"X-Slow: " + b"x" * 8 + b"\r\n\r\n")


@dataclass
class Held:
    """A connection a stalling server held: the bytes it sent, and whether the client (egis)
    cut it before it had sent everything."""

    sent: int = 0
    cut: bool = False
    open: bool = True


class StallingServer:
    """Listeners on `hosts` (one port each) that stall whoever connects.

    `how`: "trickle" completes the TLS handshake (the test CA's certificate), reads the request,
    sends `head` at once and then `trickled` one byte every `interval` seconds; "silent" accepts
    and never sends anything; "unaccepting" never accepts (the kernel completes the connections
    into its queue, and there they wait); "full" has its queue full, so that a connection never
    completes.
    `held` lists the connections it saw (for "unaccepting", those found in its queue)."""

    def __init__(self, how: str, hosts: tuple[str, ...] = ("127.0.0.1",),
                 certificates: Certificates | None = None, trickled: bytes = TRICKLED_HEAD,
                 head: bytes = b"", interval: float = 1.0) -> None:
        self.how, self.head, self.trickled, self.interval = how, head, trickled, interval
        self.context = certificates.server_context() if certificates else None
        self.held: list[Held] = []
        self.most_open = 0
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._sockets = [socket.create_server((host, 0), backlog=0 if how == "full" else 64)
                         for host in hosts]
        self.ports = {host: sock.getsockname()[1] for host, sock in zip(hosts, self._sockets,
                                                                         strict=True)}
        self._kept: list[socket.socket] = []
        if how == "full":  # the one connection its queue holds, never accepted
            self._kept += [socket.create_connection(sock.getsockname()) for sock in self._sockets]
        if how in ("trickle", "silent"):
            for sock in self._sockets:
                threading.Thread(target=self._accept, args=(sock,), daemon=True).start()

    def url(self, host: str, path: str = "/client.json") -> str:
        return f"https://{host}:{self.ports[host]}{path}"

    def open_now(self) -> int:
        with self._lock:
            return sum(held.open for held in self.held)

    def seen(self) -> int:
        """How many connections reached it (an unaccepting one's queue is emptied to count)."""
        if self.how == "unaccepting":
            for sock in self._sockets:
                sock.setblocking(False)
                while True:
                    try:
                        connection, _ = sock.accept()
                    except BlockingIOError:
                        break
                    self._kept.append(connection)
                    self.held.append(Held(open=False))
        return len(self.held)

    def _accept(self, sock: socket.socket) -> None:
        while not self._stopped.is_set():
            try:
                connection, _ = sock.accept()
            except OSError:
                return
            held = Held()
            with self._lock:
                self.held.append(held)
                self.most_open = max(self.most_open, sum(each.open for each in self.held))
            threading.Thread(target=self._stall, args=(connection, held), daemon=True).start()

    def _stall(self, connection: socket.socket, held: Held) -> None:
        try:
            if self.how == "silent":
                connection.settimeout(60)
                while connection.recv(4096):  # until egis closes it
                    pass
                held.cut = True
                return
            connection.settimeout(10)
            tls = self.context.wrap_socket(connection, server_side=True)
            request = b""
            while b"\r\n\r\n" not in request:
                request += tls.recv(4096) or b"\r\n\r\n"
            tls.sendall(self.head)
            for index in range(len(self.trickled)):
                tls.sendall(self.trickled[index:index + 1])
                held.sent += 1
                if select.select([tls], [], [], self.interval)[0] and not tls.recv(1):
                    held.cut = True  # egis closed its end
                    return
        except (OSError, ValueError):
            held.cut = True
        finally:
            held.open = False
            connection.close()

    def stop(self) -> None:
        """Stop listening (a listener's close alone would leave its accept waiting, and the
        kernel completing connections) and close what it holds."""
        self._stopped.set()
        for sock in self._sockets + self._kept:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


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


_SECRETS_OF_LIVE_SERVERS: list[dict[str, Any]] = []


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


class Clock:
    """A test clock, stopped at the moment it is made and moved by `advance`: the time of the
    OAuth code (grants, connect codes, document caches, registrations, the failed fetches
    remembered) and of `flask data prune`."""

    READERS = (grants, connect_codes, clients, registration, prune)  # each reads it as `utcnow`

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = started = utcnow()
        for module in self.READERS:
            monkeypatch.setattr(module, "utcnow", lambda: self.now)
        steady = time.monotonic()
        monkeypatch.setattr(fetches, "monotonic",
                            lambda: steady + (self.now - started).total_seconds())

    def advance(self, **by: float) -> None:
        self.now += datetime.timedelta(**by)


# --- The flow, step by step over HTTP ----------------------------------------------------------

@dataclass(frozen=True)
class Pkce:
    verifier: str
    challenge: str

    @classmethod
    def new(cls) -> "Pkce":
        verifier = secrets.token_urlsafe(48)
        digest = hashlib.sha256(verifier.encode()).digest()
        return cls(verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode())


def connect_code(app: Any, domain: str) -> str:
    """`flask agents connect DOMAIN`: the code on its last line."""
    result = app.test_cli_runner().invoke(args=["agents", "connect", domain])
    assert result.exit_code == 0, result.output
    return result.output.splitlines()[-1]


HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')


@dataclass
class Agent:
    """A client of egis walking the flow with plain HTTP (a cookie jar, as a browser has): to
    a live server, or to an app in this process through `transport` (httpx2's WSGI transport,
    for the tests that move the clock)."""

    base: str
    redirect_uri: str
    transport: httpx2.BaseTransport | None = None
    client_id: str = ""
    pkce: Pkce = field(default_factory=Pkce.new)
    http: httpx2.Client = field(init=False)

    def __post_init__(self) -> None:
        self.http = httpx2.Client(base_url=self.base, follow_redirects=False, timeout=20,
                                  transport=self.transport)

    def register(self, name: str = "Test agent") -> "Agent":
        answer = self.http.post("/oauth/register", json={
            "redirect_uris": [self.redirect_uri], "client_name": name})
        assert answer.status_code == 201, answer.text
        self.client_id = answer.json()["client_id"]
        return self

    def authorization(self, **changes: str | None) -> dict[str, str]:
        """The authorization request's parameters; a change of None leaves one out."""
        parameters = {"response_type": "code", "client_id": self.client_id,
                      "redirect_uri": self.redirect_uri, "code_challenge": self.pkce.challenge,
                      "code_challenge_method": "S256", "state": secrets.token_urlsafe(16),
                      "scope": "stats:read", "resource": f"{self.base}/api/mcp", **changes}
        return {name: value for name, value in parameters.items() if value is not None}

    def consent_form(self, parameters: dict[str, str]) -> dict[str, str]:
        page = self.http.get("/oauth/authorize", params=parameters)
        assert page.status_code == 200, page.text
        return {name: html.unescape(value) for name, value in HIDDEN.findall(page.text)}

    def decide(self, form: dict[str, str], code: str, decision: str = "allow") -> httpx2.Response:
        return self.http.post("/oauth/authorize",
                              data={**form, "connect_code": code, "decision": decision})

    def authorize(self, code: str, **changes: str | None) -> dict[str, str]:
        """Through the consent page with `code`: the query the client is sent back with."""
        parameters = self.authorization(**changes)
        answer = self.decide(self.consent_form(parameters), code)
        assert answer.status_code == 302, answer.text
        location = answer.headers["Location"]
        assert location.startswith(self.redirect_uri + "?"), location
        back = {name: values[0] for name, values in parse_qs(urlsplit(location).query).items()}
        assert back["state"] == parameters["state"] and back["iss"] == self.base
        return back

    def exchange(self, code: str, **changes: str | None) -> httpx2.Response:
        data = {"grant_type": "authorization_code", "code": code, "client_id": self.client_id,
                "redirect_uri": self.redirect_uri, "code_verifier": self.pkce.verifier,
                "resource": f"{self.base}/api/mcp", **changes}
        return self.http.post("/oauth/token",
                              data={name: value for name, value in data.items() if value})

    def refresh(self, refresh_token: str, **changes: str | None) -> httpx2.Response:
        data = {"grant_type": "refresh_token", "refresh_token": refresh_token,
                "client_id": self.client_id, **changes}
        return self.http.post("/oauth/token",
                              data={name: value for name, value in data.items() if value})

    def tokens(self, code: str) -> dict[str, Any]:
        """Authorized with the connect code `code`, then exchanged: the token answer."""
        answer = self.exchange(self.authorize(code)["code"])
        assert answer.status_code == 200, answer.text
        return answer.json()

    def call(self, token: str, method: str = "tools/call", path: str = "/api/mcp",
             **params: Any) -> httpx2.Response:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return self.http.post(path, json=body, headers={
            "Authorization": f"Bearer {token}", "Accept": "application/json",
            "MCP-Protocol-Version": "2025-11-25"})


def agents(base: str, transport: httpx2.BaseTransport | None = None
           ) -> Iterator[Callable[..., Agent]]:
    made: list[Agent] = []

    def make(redirect_uri: str = f"http://127.0.0.1:1{REDIRECT_PATH}") -> Agent:
        made.append(Agent(base, redirect_uri, transport))
        return made[-1]

    yield make
    for each in made:
        each.http.close()


@pytest.fixture
def agent(egis: LiveServer) -> Iterator[Callable[..., Agent]]:
    """Agents of the live server."""
    yield from agents(egis.url)


@contextmanager
def in_process(app: Any) -> Iterator[Callable[..., Agent]]:
    """Agents of `app`, in this process (http://localhost), for the tests that move a clock or
    change a setting."""
    yield from agents("http://localhost", httpx2.WSGITransport(app=app))
