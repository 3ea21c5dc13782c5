"""A real egis for the client: gunicorn (EGIS_TEST_WSGI's server) on the test database, one
site with its keys; clients shut down after each test; a TCP proxy that can lose answers."""
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from egis_client import Client

from models import CrawlHit, Event, ServerEvent
from tests.conftest import (
    IN_REQUEST,
    WSGI_SERVER,
    LiveServer,
    SiteKeys,
    create_site,
    free_port,
    launch,
    launch_server,
    server_command,
    stop_server,
)
from tests.helpers import db


@dataclass
class Egis:
    app: Any  # a Flask app on the same database, to read what was stored
    keys: SiteKeys
    url: str


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


class RestartableEgis:
    """egis on one port, stopped and started again there (an outage)."""

    def __init__(self, database_url: str, log_dir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.database_url, self.log_dir = database_url, log_dir
        self.server: LiveServer | None = None
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        self.server = launch(server_command(self.port, 2, False), self.port, self.database_url,
                             self.log_dir / f"{WSGI_SERVER}-{self.starts}.log",
                             granian_workers=2 if WSGI_SERVER == "granian" else 0)

    def stop(self) -> None:
        if self.server is not None:
            stop_server(self.server)
            self.server = None


@pytest.fixture
def restartable(migrated: str, tmp_path: Path, make_app) -> Iterator[RestartableEgis]:
    live = RestartableEgis(migrated, tmp_path)
    live.start()
    yield live
    live.stop()


@dataclass
class Exchange:
    at: float  # time.monotonic() when the request arrived
    request_line: str
    status: int | None = None
    retry_after: int | None = None
    lost: bool = False  # egis answered; the proxy dropped the answer
    failed: bool = False  # the proxy answered 502 itself; egis never saw the request


# What nginx answers when the egis behind it is down: a 502 with an HTML page.
BAD_GATEWAY = (b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nContent-Length: 50"
               b"\r\nConnection: close\r\n\r\n<html><body><h1>502 Bad Gateway</h1></body></html>")


@dataclass
class LosingProxy:
    """An HTTP proxy to egis, one request per connection. For a path in `lose`, it forwards the
    request and lets egis answer, but drops that answer (closing the connection instead): the
    client cannot know whether egis stored the request. For a path in `fail`, it answers 502
    itself, as nginx does when egis is down. Each as many times as the count says."""

    upstream_port: int
    lose: dict[str, int] = field(default_factory=dict)
    fail: dict[str, int] = field(default_factory=dict)
    exchanges: list[Exchange] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def for_path(self, path: str) -> list[Exchange]:
        with self.lock:
            return [e for e in self.exchanges if e.request_line.split(" ")[1] == path]

    def close(self) -> None:
        self.listener.close()

    def _accept(self) -> None:
        while True:
            try:
                downstream, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(downstream,), daemon=True).start()

    def _take(self, counts: dict[str, int], path: str) -> bool:
        if counts.get(path, 0) <= 0:
            return False
        counts[path] -= 1
        return True

    def _serve(self, downstream: socket.socket) -> None:
        with downstream:
            request = _read_message(downstream)
            exchange = Exchange(time.monotonic(), request.split(b"\r\n", 1)[0].decode())
            path = exchange.request_line.split(" ")[1]
            with self.lock:
                exchange.failed = self._take(self.fail, path)
                exchange.lost = not exchange.failed and self._take(self.lose, path)
                self.exchanges.append(exchange)
            if exchange.failed:
                answer = BAD_GATEWAY
            else:
                with socket.create_connection(("127.0.0.1", self.upstream_port)) as upstream:
                    upstream.sendall(request)
                    answer = _read_message(upstream)
            _note_answer(exchange, answer)  # before the client can see the answer
            if not exchange.lost:
                downstream.sendall(answer)
            downstream.shutdown(socket.SHUT_RDWR)  # a lost answer: closed without a response


def _read_message(sock: socket.socket) -> bytes:
    """One whole HTTP message from `sock`: its head, then Content-Length bytes of body."""
    message = b""
    while True:
        head, separator, body = message.partition(b"\r\n\r\n")
        if separator and len(body) >= _content_length(head):
            return message
        chunk = sock.recv(65536)
        if not chunk:
            return message
        message += chunk


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0


def _note_answer(exchange: Exchange, answer: bytes) -> None:
    head = answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
    exchange.status = int(head[0].split(b" ")[1])
    for line in head[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"retry-after":
            exchange.retry_after = int(value.strip())


@pytest.fixture
def proxy(egis: Egis) -> Iterator[LosingProxy]:
    losing = LosingProxy(int(egis.url.rsplit(":", 1)[1]))
    yield losing
    losing.close()


def stored(egis_app) -> dict[str, list[Any]]:
    """What the test site stored, by kind, in the order stored."""
    with db(egis_app):
        return {
            "events": list(Event.select().where(Event.type != "goal").order_by(Event.id)),
            "goals": list(Event.select().where(Event.type == "goal").order_by(Event.id)),
            "server_events": list(ServerEvent.select().order_by(ServerEvent.id)),
            "crawl_hits": list(CrawlHit.select().order_by(CrawlHit.id)),
        }
