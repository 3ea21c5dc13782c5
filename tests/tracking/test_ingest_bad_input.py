"""Bad input on both tracking endpoints: always a 4xx JSON error, never a 500, nothing stored.

The body corpus lives in tests/fixtures/tracking.py (test_validation_paths.py reuses it); this
module adds the transport: content types, encodings, sizes, gzip bombs, chunked bodies.
"""
import http.client
import socket
import tracemalloc
import zlib
from functools import cache
from urllib.parse import urlsplit

import pytest

from tests.fixtures.tracking import (
    EVENT_BAD_BODIES,
    GOAL_BAD_BODIES,
    NOTHING,
    assert_json_error,
    batch,
    dumps,
    error_matches,
    event,
    goal,
    gzipped,
    post_json,
    stored_counts,
    tallies,
)

ENDPOINTS = {"/api/events": lambda: batch(2), "/api/goals": goal}
BOMB_DECODED = 50 * 1024 * 1024


@cache
def gzip_bomb() -> bytes:
    """50 MB of zeros, gzipped to about 50 KB, built without holding the 50 MB."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b"\0" * (1024 * 1024)
    parts = [compressor.compress(chunk) for _ in range(BOMB_DECODED // len(chunk))]
    return b"".join(parts) + compressor.flush()


def check_rejected(app, response, status: int, expected: str | None = None,
                   tally: dict[str, int] | None = None) -> dict:
    assert response.status_code != 500
    body = assert_json_error(response, status)
    if expected is not None:
        assert error_matches(body["error"], expected), body["error"]
    assert stored_counts(app) == NOTHING
    if tally is not None:
        assert tallies(app) == tally
    return body


@pytest.mark.parametrize(("body", "status", "expected"),
                         [case[1:] for case in EVENT_BAD_BODIES],
                         ids=[case[0] for case in EVENT_BAD_BODIES])
def test_bad_event_batches(client, app, std_site, body, status, expected):
    response = post_json(client, "/api/events", body, std_site.write_headers())
    check_rejected(app, response, status, expected, {"rejected_400": 1})


@pytest.mark.parametrize(("body", "status", "expected"),
                         [case[1:] for case in GOAL_BAD_BODIES],
                         ids=[case[0] for case in GOAL_BAD_BODIES])
def test_bad_goals(client, app, std_site, body, status, expected):
    response = post_json(client, "/api/goals", body, std_site.write_headers())
    check_rejected(app, response, status, expected, {"rejected_400": 1})


def test_deeply_nested_unknown_fields_are_ignored(client, app, std_site):
    text = dumps(batch(extra="PLACEHOLDER")).replace(
        b'"PLACEHOLDER"', b'{"a":' * 300 + b"1" + b"}" * 300)
    response = post_json(client, "/api/events", text, std_site.write_headers())
    assert response.get_json() == {"success": True, "count": 1}


# --- content types and encodings ------------------------------------------------------------

TRANSPORT_CASES = [
    # (id, content type, content encoding, how to encode the valid body, status, error)
    ("text-plain", "text/plain", None, dumps, 415,
     "The request body must be JSON: send Content-Type: application/json."),
    ("form-encoded", "application/x-www-form-urlencoded", None, lambda b: b"a=1&b=2", 415,
     "The request body must be JSON: send Content-Type: application/json."),
    ("multipart", "multipart/form-data; boundary=x", None, lambda b: b"--x--", 415,
     "The request body must be JSON: send Content-Type: application/json."),
    ("no-content-type", "", None, dumps, 415,
     "The request body must be JSON: send Content-Type: application/json."),
    ("brotli", "application/json", "br", dumps, 415,
     "Unsupported Content-Encoding 'br': use gzip or none."),
    ("deflate", "application/json", "deflate", lambda b: zlib.compress(dumps(b)), 415,
     "Unsupported Content-Encoding 'deflate': use gzip or none."),
    ("gzip-twice", "application/json", "gzip, gzip", lambda b: gzipped(gzipped(b)), 415,
     "Unsupported Content-Encoding 'gzip, gzip': use gzip or none."),
    ("corrupt-gzip", "application/json", "gzip", lambda b: gzipped(b)[:-8] + b"\0" * 8, 400,
     "The gzip body could not be decoded: Error -3 while decompressing data: incorrect data "
     "check."),
    ("gzip-header-only", "application/json", "gzip", lambda b: b"\x1f\x8b\x08\x00garbage", 400,
     "The gzip body is truncated."),
    ("plain-body-said-gzip", "application/json", "gzip", dumps, 400,
     "The gzip body could not be decoded: …"),
    ("truncated-gzip", "application/json", "gzip", lambda b: gzipped(b)[:-12], 400,
     "The gzip body is truncated."),
    ("gzipped-invalid-json", "application/json", "gzip", lambda b: gzipped(b"{nope"), 400,
     "The request body is not valid JSON: …"),
    ("gzipped-array", "application/json", "gzip", lambda b: gzipped(b"[1]"), 400,
     "The request body must be a JSON object, not an array."),
]


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize(("content_type", "encoding", "encode", "status", "expected"),
                         [case[1:] for case in TRANSPORT_CASES],
                         ids=[case[0] for case in TRANSPORT_CASES])
def test_transport_errors(client, app, std_site, path, content_type, encoding, encode, status,
                          expected):
    response = post_json(client, path, encode(ENDPOINTS[path]()), std_site.write_headers(),
                         content_type=content_type, encoding=encoding)
    # Only the reasons the issue lists are tallied (a 415 is a client bug, not a lost event).
    check_rejected(app, response, status, expected,
                   {"rejected_400": 1} if status == 400 else {})


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize(("content_type", "encoding"), [
    ("application/json", "gzip"), ("application/json", "GZIP"), ("application/json", "identity"),
    ("application/json; charset=utf-8", None), ("application/vnd.egis+json", None),
])
def test_accepted_encodings_and_types(client, app, std_site, path, content_type, encoding):
    body = ENDPOINTS[path]()
    data = gzipped(body) if encoding and encoding.lower() == "gzip" else dumps(body)
    response = post_json(client, path, data, std_site.write_headers(),
                         content_type=content_type, encoding=encoding)
    assert response.status_code == 200, response.get_json()
    assert stored_counts(app)["events"] >= 1


def test_gzip_flag_in_batch_is_informational(client, app, std_site):
    response = post_json(client, "/api/events", gzipped(batch(compressed=True)),
                         std_site.write_headers(), encoding="gzip")
    assert response.get_json() == {"success": True, "count": 1}


# --- sizes ----------------------------------------------------------------------------------

def padded(path: str, size: int) -> bytes:
    """A valid body for `path` of exactly `size` bytes."""
    if path == "/api/goals":
        body = goal(metadata={"pad": ""})
        pad_at = body["metadata"]
    else:
        body = batch([event(properties={"pad": ""})])
        pad_at = body["events"][0]["properties"]
    pad_at["pad"] = "x" * (size - len(dumps(body)))
    data = dumps(body)
    assert len(data) == size
    return data


CAP = 4096


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize("gzip_it", [False, True], ids=["plain", "gzip"])
def test_body_size_at_and_over_the_cap(make_app, std_site, path, gzip_it):
    app = make_app(MAX_BODY_BYTES=CAP)
    client = app.test_client()
    encoding = "gzip" if gzip_it else None

    def send(size: int):
        data = padded(path, size)
        return post_json(client, path, gzipped(data) if gzip_it else data,
                         std_site.write_headers(), encoding=encoding)

    over = send(CAP + 1)
    check_rejected(app, over, 413,
                   "The request body is larger than 4096 bytes (after gzip decoding).",
                   {"rejected_413": 1})
    far_over = send(CAP * 3)
    check_rejected(app, far_over, 413, None if gzip_it else "The request body is too large.",
                   {"rejected_413": 2})
    at = send(CAP)
    assert at.status_code == 200, at.get_json()
    assert stored_counts(app)["events"] == 1


@pytest.mark.parametrize("path", ENDPOINTS)
def test_gzip_bomb_is_stopped_at_the_cap(client, app, std_site, path):
    bomb = gzip_bomb()
    assert len(bomb) < 100_000
    tracemalloc.start()
    try:
        response = post_json(client, path, bomb, std_site.write_headers(), encoding="gzip")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    check_rejected(app, response, 413,
                   "The request body is larger than 1048576 bytes (after gzip decoding).",
                   {"rejected_413": 1})
    assert peak < 8 * 2**20, "decoding stops at the cap: the 50 MB are never held"


def test_bad_input_from_an_allowed_browser_carries_cors_headers(client, app, std_site):
    response = post_json(client, "/api/events", b"[]", std_site.write_headers(
        Origin="https://std.example"))
    check_rejected(app, response, 400)
    assert response.headers["Access-Control-Allow-Origin"] == "https://std.example"


# --- through a real server: chunked bodies have no Content-Length to check up front ---------

def _post_chunked(url: str, path: str, chunks: list[bytes], headers: dict[str, str]):
    """POST `chunks` with chunked transfer coding on a raw socket, then read the answer. A server
    may answer 413 and close before the body's end (granian does): the client's send then
    fails with a broken pipe or a reset, as any HTTP client's would, and the answer is read."""
    parts = urlsplit(url)
    head = "".join(f"{name}: {value}\r\n" for name, value in
                   {"Host": parts.netloc, "Content-Type": "application/json",
                    "Transfer-Encoding": "chunked", **headers}.items())
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        try:
            sock.sendall(f"POST {path} HTTP/1.1\r\n{head}\r\n".encode("latin-1"))
            for chunk in chunks:
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # answered before the body's end: the answer is waiting to be read
        response = http.client.HTTPResponse(sock)
        response.begin()
        return response.status, response.read(), response.headers


@pytest.mark.slow
def test_chunked_bodies_are_capped_too(start_server, app, std_site):
    import orjson

    server = start_server(workers=1, env={"EGIS_MAX_BODY_BYTES": "4096"})
    headers = std_site.write_headers()
    ok = _post_chunked(server.url, "/api/events", [dumps(batch())], headers)
    assert ok[0] == 200, ok
    big = padded("/api/events", 20_000)
    status, data, _ = _post_chunked(server.url, "/api/events",
                                    [big[i:i + 1000] for i in range(0, len(big), 1000)], headers)
    assert status == 413 and "error" in orjson.loads(data)
    bomb = gzip_bomb()
    status, data, _ = _post_chunked(server.url, "/api/events",
                                    [bomb[i:i + 8192] for i in range(0, len(bomb), 8192)],
                                    {**headers, "Content-Encoding": "gzip"})
    assert status == 413 and "error" in orjson.loads(data)
    assert stored_counts(app)["events"] == 1
    assert "Traceback" not in server.log()
