"""Talking to a live server on the wire: any header, any body, chunked or raw bytes, from a
chosen loopback source address (so that address can be looked for in logs and tables)."""
import http.client
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson

CLIENT_ADDRESS = "127.0.0.2"  # loopback, but not the 127.0.0.1 the server itself logs


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]  # names lower-cased
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


def _address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 80


def send(url: str, method: str, path: str, body: bytes | Iterable[bytes] | None = None,
         headers: dict[str, str] | None = None, timeout: float = 15,
         source: str = CLIENT_ADDRESS) -> Answer:
    """One request; an iterable body goes out chunked, without Content-Length."""
    host, port = _address(url)
    connection = http.client.HTTPConnection(host, port, timeout=timeout,
                                            source_address=(source, 0))
    chunked = body is not None and not isinstance(body, bytes)
    try:
        connection.request(method, path, body=body, headers=headers or {},
                           encode_chunked=chunked)
        response = connection.getresponse()
        return Answer(response.status, {k.lower(): v for k, v in response.getheaders()},
                      response.read())
    finally:
        connection.close()


def post(url: str, path: str, body: Any, headers: dict[str, str] | None = None,
         **options: Any) -> Answer:
    """POST JSON: bytes (or chunks) as they are, anything else serialized."""
    data = body if isinstance(body, bytes) or hasattr(body, "__next__") else orjson.dumps(body)
    return send(url, "POST", path, data, {"Content-Type": "application/json", **(headers or {})},
                **options)


def send_raw(url: str, request: bytes, timeout: float = 15,
             source: str = CLIENT_ADDRESS) -> Answer:
    """Bytes no HTTP library would send (newlines in a header value, obsolete folding...);
    the request must ask for `Connection: close`."""
    with socket.create_connection(_address(url), timeout=timeout,
                                  source_address=(source, 0)) as sock:
        sock.sendall(request)
        received = bytearray()
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = bytes(received).partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in header_lines)
    return Answer(int(status_line.split()[1]), {k.lower(): v for k, v in headers.items()}, body)
