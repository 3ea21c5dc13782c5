"""Database outage and recovery: 503 with Retry-After while PostgreSQL is unreachable, and the
same app (same pool) answers again by itself once it is back, without a restart.

A small TCP proxy on loopback stands between the app and the test PostgreSQL; "down" closes
every proxied connection and the listening socket (new connections are refused), "up" listens
again on the same port.
"""
import contextlib
import socket
import threading
from urllib.parse import urlsplit, urlunsplit

import pytest

from app.web.errors import MESSAGES
from tests.fixtures.database import BACKEND
from tests.fixtures.servers import free_port

READYZ_DOWN = "The database is unavailable."
pytestmark = pytest.mark.skipif(
    BACKEND == "sqlite", reason="an embedded SQLite file has no server connection to lose")


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = free_port()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self._stop = threading.Event()
        self._acceptor: threading.Thread | None = None
        self.accepted = 0

    # --- control ---
    def up(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(0.05)
        self._listener = listener
        self._stop = threading.Event()
        self._acceptor = threading.Thread(target=self._accept_loop, args=(listener, self._stop),
                                          daemon=True)
        self._acceptor.start()

    def down(self) -> None:
        """Refuse new connections and cut every open one."""
        self._stop.set()
        if self._acceptor is not None:
            self._acceptor.join(timeout=5)
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            _shut(sock)

    # --- plumbing ---
    def _accept_loop(self, listener: socket.socket, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if stop.is_set():  # accepted in the instant of going down
                _shut(client)
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                _shut(client)
                continue
            client.settimeout(None)
            upstream.settimeout(None)
            with self._lock:
                self._sockets.update((client, upstream))
                self.accepted += 1
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(src, dst), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            _shut(src)
            _shut(dst)
            with self._lock:
                self._sockets.discard(src)
                self._sockets.discard(dst)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


@pytest.fixture
def proxy(migrated):
    parts = urlsplit(migrated)
    proxy = TcpProxy(parts.hostname or "127.0.0.1", parts.port or 5432)
    proxy.up()
    netloc = parts.netloc.rsplit("@", 1)
    userinfo = f"{netloc[0]}@" if len(netloc) == 2 else ""
    proxy.url = urlunsplit(parts._replace(netloc=f"{userinfo}127.0.0.1:{proxy.port}"))
    yield proxy
    proxy.down()


def assert_unavailable(response, message: str = MESSAGES[503]) -> None:
    assert response.status_code == 503, response.get_data(True)
    assert response.mimetype == "application/json"
    assert response.get_json() == {"error": message}
    assert int(response.headers["Retry-After"]) > 0


def recovers(call, limit: int) -> list[int]:
    """Call until a 200, at most `limit` times: every failure on the way must be a proper 503
    (a dead pooled connection may cost the request that finds it), never a 500."""
    statuses = []
    for _ in range(limit):
        response = call()
        statuses.append(response.status_code)
        if response.status_code == 200:
            return statuses
        assert_unavailable(response)
    raise AssertionError(f"no recovery after {limit} requests: {statuses}")


# Nothing cached: every request below needs the database (the key and usage caches would let a
# warm /api/validate answer without it, which is fine in production but proves nothing here).
UNCACHED = {"KEY_CACHE_SECONDS": 0, "USAGE_CACHE_SECONDS": 0, "DB_MAX_CONNECTIONS": 4}


def test_database_down_then_back(make_app, std_site, proxy):
    app = make_app(DATABASE_URL=proxy.url, **UNCACHED)
    client = app.test_client()
    headers = std_site.write_headers()

    def validate():
        return client.get("/api/validate", headers=headers)

    # Warm: the pool now holds a connection that is about to die.
    for _ in range(3):
        response = validate()
        assert response.status_code == 200, response.get_data(True)
    assert client.get("/readyz").status_code == 200
    assert proxy.accepted >= 1

    proxy.down()
    for _ in range(3):
        assert_unavailable(validate())
    assert_unavailable(client.post("/api/goals", json={"goal_name": "x"}, headers=headers))
    assert_unavailable(client.get("/readyz"), READYZ_DOWN)
    assert client.get("/healthz").status_code == 200

    proxy.up()
    statuses = recovers(validate, limit=UNCACHED["DB_MAX_CONNECTIONS"] + 1)
    assert statuses[-1] == 200
    for _ in range(3):  # and it stays up
        response = validate()
        assert response.status_code == 200, response.get_data(True)
        assert response.get_json()["valid"] is True
    assert client.get("/readyz").status_code == 200
    assert client.post("/api/goals", json={"goal_name": "x"}, headers=headers).status_code == 200


def test_connections_cut_while_idle_in_the_pool(make_app, std_site, proxy):
    """The server drops the idle pooled connections (restart, failover) and is straight back:
    the app must not keep handing out the dead ones."""
    app = make_app(DATABASE_URL=proxy.url, **UNCACHED)
    client = app.test_client()
    headers = std_site.write_headers()

    def validate():
        return client.get("/api/validate", headers=headers)

    assert validate().status_code == 200
    before = proxy.accepted
    proxy.down()
    proxy.up()
    recovers(validate, limit=UNCACHED["DB_MAX_CONNECTIONS"] + 1)
    assert proxy.accepted > before  # a new connection replaced the dead one
    for _ in range(3):
        assert validate().status_code == 200


def test_readyz_recovers_by_itself(make_app, proxy):
    app = make_app(DATABASE_URL=proxy.url)
    client = app.test_client()
    assert client.get("/readyz").status_code == 200
    proxy.down()
    assert_unavailable(client.get("/readyz"), READYZ_DOWN)
    proxy.up()
    statuses = []
    for _ in range(3):
        response = client.get("/readyz")
        statuses.append(response.status_code)
        if response.status_code == 200:
            break
        assert response.status_code == 503
    assert statuses[-1] == 200, statuses
