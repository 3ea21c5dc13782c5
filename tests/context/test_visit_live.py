"""Hostile headers as raw bytes through a real gunicorn (deploy/gunicorn.conf.py) behind one
trusted proxy hop: stored, with nulls where nothing can be read; never refused, never a 500.

granian (EGIS_TEST_WSGI=granian) does not hand a User-Agent that is not UTF-8 to the app at all:
such a browser request has no User-Agent, which the bot filter answers `"bot": true` (200,
nothing stored), as it answers any browser request without one.

(Headers over gunicorn's 8,190-byte field limit are gunicorn's to refuse before egis sees them;
the 10 KB Accept-Language is tested through the test client, tests/context/test_request.py.)
"""
import socket
from urllib.parse import urlsplit

import orjson
import pytest

from tests.fixtures.servers import WSGI_SERVER
from tests.fixtures.tracking import batch, stored_events

pytestmark = pytest.mark.slow


def raw_post(url: str, key: str, body: bytes, headers: list[bytes]) -> tuple[bytes, dict]:
    """POST /api/events with header lines sent byte for byte; the status line and the body."""
    parts = urlsplit(url)
    request = b"\r\n".join([
        b"POST /api/events HTTP/1.1", b"Host: 127.0.0.1", b"Connection: close",
        b"Content-Type: application/json", b"X-API-Key: " + key.encode(),
        b"Origin: https://std.example", b"Content-Length: %d" % len(body), *headers, b"", b""])
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as connection:
        connection.sendall(request + body)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return head.split(b"\r\n", 1)[0], orjson.loads(body)


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_hostile_header_bytes_are_stored_with_nulls(start_server, app, std_site):
    server = start_server(workers=1, env={"EGIS_TRUSTED_PROXIES": "1"}, deploy_config=True)
    cases = [
        # A lone surrogate's and an emoji's UTF-8 bytes in an iPhone's User-Agent of 8 KB, the
        # client address last of 200 forwarded ones, an Accept-Language of 8 KB of garbage.
        ([b"User-Agent: Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) \xed\xa0\x80 "
          b"\xf0\x9f\x98\x80 " + b"x" * 8000,
          b"X-Forwarded-For: " + b", ".join([b"garbage"] * 199 + [b"193.99.144.80"]),
          b"Accept-Language: " + b"\xff" * 8000],
         ("DE", "Mobile", "iOS", None)),
        ([b"User-Agent: " + b"\xed\xa0\xbd\xed\xb8\x80" * 1000,
          b"X-Forwarded-For: 8.8.8.8, fe80::1%eth0",
          b"Accept-Language: *"],
         (None, "Desktop", None, None)),
        ([b"User-Agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, "
          b"like Gecko) Chrome/131.0.0.0 Safari/537.36",
          b"X-Forwarded-For: " + b", ".join([b"2001:4860:4860::8888%25eth0"] * 200),
          b"Accept-Language: de-CH,de;q=0.9"],
         (None, "Desktop", "Windows", "de")),
    ]
    stored = []
    for headers, expected in cases:
        status, answer = raw_post(server.url, std_site.write_key, orjson.dumps(batch(1)), headers)
        assert status == b"HTTP/1.1 200 OK", (status, headers[0][:80])
        user_agent_is_utf8 = _is_utf8(headers[0])
        if WSGI_SERVER == "granian" and not user_agent_is_utf8:
            assert answer == {"success": True, "count": 0, "bot": True}
        else:
            assert answer == {"success": True, "count": 1}
            stored.append(expected)
    rows = stored_events(app)
    assert [(row.country, row.device, row.os, row.language) for row in rows] == stored
    assert "Traceback" not in server.log()
