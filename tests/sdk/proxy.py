"""An HTTP proxy in front of a live egis that can fail on purpose, and records what it saw.

The browser talks to the proxy as if it were egis (/tracker.js and the API). For POST
/api/events the test decides, request by request, what happens: passed through, refused with a
503 before egis sees it, a 503 *after* egis stored it (the client must retry with the same batch
id, and egis must store it once), the connection dropped without an answer (a network error), or
held unanswered until the test calls `release()`, then a 503 (a request still in flight).
Everything else is passed through. Each event batch that reached the proxy is recorded, decoded
(gzip included), so tests assert on what was sent without trusting the page.
"""
import gzip
import http.client
import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

PASS, FAIL_BEFORE, FAIL_AFTER, DROP, STALL = "pass", "fail-before", "fail-after", "drop", "stall"
STALL_LIMIT_SECONDS = 60  # a stalled request a test forgot to release still ends
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
              "proxy-connection", "content-length", "host"}


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A page that is left mid-request closes its connection: not worth a traceback."""


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    batch: dict[str, Any] | None
    action: str
    status: int | None = None  # what egis answered, when it was asked
    answer: bytes = b""


@dataclass
class FlakyProxy:
    upstream: str
    actions: deque[str] = field(default_factory=deque)
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    released: threading.Event = field(default_factory=threading.Event)
    server: ThreadingHTTPServer | None = None
    retry_after: str = "1"  # seconds, in the proxy's 503s

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def fail_next(self, *actions: str) -> None:
        """What the next event POSTs meet, in order; passed through once these are used."""
        with self.lock:
            self.actions.extend(actions)

    def admit(self, path: str, headers: dict[str, str], batch: dict[str, Any] | None
              ) -> Received:
        """Record an event POST with the action it meets: both under one lock, so that the
        order of `received` is the order in which the actions were handed out."""
        with self.lock:
            item = Received(path, headers, batch, self.actions.popleft() if self.actions else PASS)
            self.received.append(item)
            return item

    def batches(self) -> list[dict[str, Any]]:
        with self.lock:
            return [item.batch for item in self.received if item.batch is not None]

    def start(self) -> "FlakyProxy":
        self.server = _QuietServer(("127.0.0.1", 0), _handler_for(self))
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def release(self) -> None:
        """Answer the stalled requests (503), and any later one at once."""
        self.released.set()

    def stop(self) -> None:
        self.release()
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def _decoded_batch(headers: dict[str, str], body: bytes) -> dict[str, Any] | None:
    try:
        if headers.get("content-encoding", "").lower() == "gzip":
            body = gzip.decompress(body)
        return json.loads(body)
    except (OSError, ValueError):
        return None


def _handler_for(proxy: FlakyProxy) -> type[BaseHTTPRequestHandler]:
    upstream = urlsplit(proxy.upstream)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_args: Any) -> None:  # quiet
            pass

        def _forward(self, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
            connection = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=30)
            try:
                headers = {name: value for name, value in self.headers.items()
                           if name.lower() not in HOP_BY_HOP}
                connection.request(self.command, self.path, body=body or None, headers=headers)
                response = connection.getresponse()
                return response.status, response.getheaders(), response.read()
            finally:
                connection.close()

        def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
            self.send_response(status)
            for name, value in headers:
                if name.lower() not in HOP_BY_HOP:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _unavailable(self) -> None:
            body = b'{"error": "The database is unavailable."}'
            headers = [("Content-Type", "application/json"), ("Retry-After", proxy.retry_after)]
            origin = self.headers.get("Origin")
            if origin:
                headers.append(("Access-Control-Allow-Origin", origin))
            self._answer(503, headers, body)

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            is_batch = self.command == "POST" and self.path.startswith("/api/events")
            received = None
            if is_batch:
                headers = {name.lower(): value for name, value in self.headers.items()}
                received = proxy.admit(self.path, headers, _decoded_batch(headers, body))
            action = received.action if received is not None else PASS
            if action == DROP:
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if action == STALL:
                proxy.released.wait(STALL_LIMIT_SECONDS)
            if action in (FAIL_BEFORE, STALL):
                self._unavailable()
                return
            status, headers, answer = self._forward(body)
            if received is not None:
                received.status, received.answer = status, answer
            if action == FAIL_AFTER:
                self._unavailable()
                return
            self._answer(status, headers, answer)

        do_GET = do_POST = do_OPTIONS = do_HEAD = _handle

    return Handler
