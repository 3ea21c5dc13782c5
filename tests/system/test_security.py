"""The security promises (README, docs/ARCHITECTURE.md), one test each, against the deployed server
(gunicorn with deploy/gunicorn.conf.py, or granian with deploy/granian_server.py under
EGIS_TEST_WSGI=granian) behind a trusted proxy hop (EGIS_TRUSTED_PROXIES=1), on the test
database, talking from 127.0.0.2 so that the peer address can be looked for too.

One module-scoped run of mixed traffic (`evidence`) touches every endpoint with every kind of
key, good and bad bodies, forwarded client addresses and a crawl report's `ip`; the tests then
read what it left behind: responses, the server's log (access log on, debug level), /metrics and
a dump of the whole database. The other tests send their own requests to the same server.
"""
import hashlib
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest

from app.access import keys
from models import database
from models.api_key import SERVER, WRITE
from tests.fixtures import ROOT
from tests.fixtures.deployment import Deployment, deployment
from tests.fixtures.helpers import database_bytes
from tests.fixtures.servers import WSGI_SERVER
from tests.fixtures.tracking import batch, dumps, goal, gzipped, unique
from tests.fixtures.wire import CLIENT_ADDRESS, Answer, post, send, send_raw

pytestmark = pytest.mark.slow

MAX_BODY = 65536
FORWARDED_FOR = ("203.0.113.9", "2001:db8::77")  # the client, as the proxy hop reports it
CRAWLER_IP = "198.51.100.23"  # a crawl report's `ip`: names the network, never kept
CRAWLER_NETWORK = "198.51.100.0/24"
GPTBOT = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2)"
UNKNOWN_KEYS = ("egis_" + "Q" * 43, "egiss_" + "Z" * 43)
ACCEPT_MCP = "application/json, text/event-stream"
INTERNALS = ("Traceback", 'File "', ".py", str(ROOT), "/usr/", "SELECT ", "INSERT ", "psycopg",
             "peewee", "sqlite", "Error(", "Exception")


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str
    kinds: tuple[str, ...]
    body: Callable[[], Any] | None  # a valid body, new ids each call
    extra_headers: tuple[tuple[str, str], ...] = ()

    def call(self, url: str, key_headers: dict[str, str], body: Any = None,
             **headers: str) -> Answer:
        all_headers = {**dict(self.extra_headers), **key_headers, **headers}
        if self.method == "GET":
            return send(url, "GET", self.path, headers=all_headers)
        return post(url, self.path, self.body() if body is None else body, all_headers)


def server_event() -> dict[str, Any]:
    return {"eventName": "purchase", "amount": 19.99, "currency": "USD",
            "orderId": unique("order"), "identifiedUserId": "user-1"}


def crawl_report() -> dict[str, Any]:
    return {"path": "/pricing?ref=x", "userAgent": GPTBOT, "ip": CRAWLER_IP}


def overview_call() -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "get_overview", "arguments": {}}}


ENDPOINTS = (
    Endpoint("POST", "/api/events", (WRITE,), lambda: batch(2)),
    Endpoint("POST", "/api/goals", (WRITE,), goal),
    Endpoint("GET", "/api/validate", (WRITE, SERVER), None),
    Endpoint("POST", "/api/server/events", (SERVER,), server_event),
    Endpoint("POST", "/api/crawl/report", (SERVER,), crawl_report),
    Endpoint("POST", "/api/mcp", (SERVER,), overview_call,
             (("Accept", ACCEPT_MCP), ("MCP-Protocol-Version", "2025-11-25"))),
)
POST_ENDPOINTS = [endpoint for endpoint in ENDPOINTS if endpoint.method == "POST"]
SERVER_ONLY = [endpoint for endpoint in ENDPOINTS if endpoint.kinds == (SERVER,)]


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@dataclass(frozen=True)
class Live:
    deployment: Deployment
    revoked: tuple[str, str]  # a revoked write key and a revoked server key

    @property
    def url(self) -> str:
        return self.deployment.url

    def key_for(self, kind: str) -> str:
        std = self.deployment.std
        return std.write_key if kind == WRITE else std.server_key

    @property
    def all_keys(self) -> tuple[str, ...]:
        sites = (self.deployment.std, self.deployment.free)
        return (*(site.write_key for site in sites), *(site.server_key for site in sites),
                *self.revoked)


@pytest.fixture(scope="module")
def live(migrated: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    env = {"EGIS_TRUSTED_PROXIES": "1", "EGIS_KEY_CACHE_SECONDS": "0",
           "EGIS_MAX_BODY_BYTES": str(MAX_BODY), "EGIS_RATE_LIMIT_VALIDATE": "100000/minute",
           "EGIS_RATE_LIMIT_IP": "100000/minute", "GUNICORN_LOGLEVEL": "debug",
           "GRANIAN_LOG_LEVEL": "debug"}
    with deployment(migrated, tmp_path_factory.mktemp("security"), env) as running:
        with running.app.app_context(), database.connection_context():
            site = running.std.site
            revoked = tuple(keys.issue(site, kind, prefix).key for kind, prefix in (
                (WRITE, running.app.config["WRITE_KEY_PREFIX"]),
                (SERVER, running.app.config["SERVER_KEY_PREFIX"])))
            for key in revoked:
                keys.revoke(key)
        yield Live(running, revoked)


# --- one run of mixed traffic, and what it left behind ----------------------------------------

@dataclass(frozen=True)
class Evidence:
    answers: list[Answer]
    log: str
    metrics: str
    dump: bytes


def mixed_traffic(live: Live) -> list[Answer]:
    answers = []
    forwarded = iter(FORWARDED_FOR * 100)

    def call(endpoint: Endpoint, key_headers: dict[str, str], body: Any = None,
             **headers: str) -> None:
        answers.append(endpoint.call(live.url, key_headers, body,
                                     **{"X-Forwarded-For": next(forwarded), **headers}))

    for endpoint in ENDPOINTS:
        for kind in (WRITE, SERVER):  # the right kind answers 2xx, the other 403
            call(endpoint, bearer(live.key_for(kind)))
        call(endpoint, {"X-API-Key": live.key_for(WRITE)}, Origin="https://std.example")
        for key in (*UNKNOWN_KEYS, *live.revoked):
            call(endpoint, bearer(key))
            call(endpoint, {"X-API-Key": key})
    server_key = bearer(live.key_for(SERVER))
    events, goals, _validate, server_events, crawl, mcp = ENDPOINTS
    call(events, {"X-API-Key": live.key_for(WRITE)}, batch(events=[], userId=live.all_keys[0]))
    call(goals, {"X-API-Key": live.key_for(WRITE)}, {"goal_name": live.key_for(SERVER) * 2})
    call(server_events, server_key, {**server_event(), "currency": live.key_for(SERVER)})
    call(server_events, server_key, {**server_event(), "identifiedUserId": "a@example.com"})
    call(crawl, server_key, {**crawl_report(), "ip": f"{CRAWLER_IP}/24"})
    call(mcp, server_key, b'{"jsonrpc": "2.0", "id": 1, "method": ')
    call(mcp, server_key, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                           "params": {"name": "get_overview", "arguments": {"from": "x"}}})
    answers.append(send(live.url, "GET", "/api/validate/more", headers=server_key))
    answers.append(send(live.url, "GET", "/api/events", headers=server_key))
    return answers


@pytest.fixture(scope="module")
def evidence(live: Live) -> Evidence:
    answers = mixed_traffic(live)
    statuses = {answer.status for answer in answers}
    assert statuses == {200, 204, 400, 401, 403, 404, 405}, statuses
    metrics = send(live.url, "GET", "/metrics").text()
    assert "egis_http_requests_total" in metrics
    dump = database_bytes(live.deployment.app.config["DATABASE_URL"])
    assert CRAWLER_NETWORK.encode() in dump and b"purchase" in dump  # the rows are in the dump
    log = live.deployment.server.log()
    assert '"POST /api/crawl/report HTTP/1.1" 204' in log  # the access log was written
    return Evidence(answers, log, metrics, dump)


def test_keys_are_stored_only_as_sha256_digests(live, evidence):
    for key in live.all_keys:
        secret = key.split("_", 1)[1]
        assert secret.encode() not in evidence.dump
        assert hashlib.sha256(key.encode()).hexdigest().encode() in evidence.dump


def test_keys_never_appear_in_logs_metrics_or_answers(live, evidence):
    for key in (*live.all_keys, *UNKNOWN_KEYS):
        secret = key.split("_", 1)[1]
        assert secret not in evidence.log
        assert secret not in evidence.metrics
        for answer in evidence.answers:
            assert secret not in answer.text() and secret not in str(answer.headers)


def test_no_client_address_in_logs_metrics_or_tables(evidence):
    for address in (*FORWARDED_FOR, CRAWLER_IP, CLIENT_ADDRESS):
        assert address not in evidence.log, address
        assert address not in evidence.metrics, address
        assert address.encode() not in evidence.dump, address
        for answer in evidence.answers:
            assert address not in answer.text(), address


def test_error_answers_are_json_and_reveal_nothing_internal(evidence):
    errors = [answer for answer in evidence.answers if answer.status >= 400]
    assert len(errors) > 50
    for answer in errors:
        assert answer.headers["content-type"] == "application/json", answer
        body = answer.json()
        assert isinstance(body["error"], str | dict) and body["error"], answer
        for internal in INTERNALS:
            assert internal not in answer.text(), (internal, answer)


# --- keys of the wrong kind, revoked keys -------------------------------------------------------

def test_write_keys_never_reach_server_endpoints_or_mcp(live):
    before = live.deployment.stored()
    for endpoint in SERVER_ONLY:
        answer = endpoint.call(live.url, bearer(live.key_for(WRITE)))
        assert answer.status == 403, answer
        assert "write (tracking) key" in answer.json()["error"]
        # X-API-Key is not read on server endpoints: the write key is not even looked at.
        answer = endpoint.call(live.url, {"X-API-Key": live.key_for(WRITE)})
        assert answer.status == 401, answer
    assert live.deployment.stored() == before


def test_revoked_keys_are_refused_everywhere(live):
    before = live.deployment.stored()
    for endpoint in ENDPOINTS:
        for key in live.revoked:
            for headers in (bearer(key), {"X-API-Key": key}):
                answer = endpoint.call(live.url, headers)
                assert answer.status == 401, (endpoint.path, answer)
                assert answer.json()["error"].startswith(
                    ("Invalid API key", "Missing API key", "This endpoint does not read X-API-Key"))
    assert live.deployment.stored() == before


# --- CORS ---------------------------------------------------------------------------------------

def cors_names(answer: Answer) -> list[str]:
    return [name for name in answer.headers if name.startswith("access-control")]


def test_server_key_endpoints_send_no_cors_headers(live):
    origin = {"Origin": "https://std.example"}
    for endpoint in SERVER_ONLY:
        answers = [
            endpoint.call(live.url, bearer(live.key_for(SERVER)), **origin),
            endpoint.call(live.url, bearer(live.key_for(SERVER)), b"[]", **origin),
            endpoint.call(live.url, bearer(live.key_for(WRITE)), **origin),
            endpoint.call(live.url, {}, **origin),
            send(live.url, "OPTIONS", endpoint.path, headers={
                **origin, "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type"}),
        ]
        assert [answer.status for answer in answers][:4] in ([200, 400, 403, 401],
                                                             [204, 400, 403, 401])
        for answer in answers:
            assert cors_names(answer) == [], (endpoint.path, answer)
    tracking = send(live.url, "OPTIONS", "/api/events", headers={
        **origin, "Access-Control-Request-Method": "POST"})
    assert cors_names(tracking)  # the same request on a tracking endpoint does get them


# --- bodies are capped, however they arrive -------------------------------------------------------

@cache
def gzip_bomb() -> bytes:
    """10 MB of zeros gzipped to ~10 KB."""
    return gzipped(b"\0" * (10 * 1024 * 1024))


def chunks(data: bytes, size: int = 8192) -> Iterator[bytes]:
    return (data[i:i + size] for i in range(0, len(data), size))


def test_every_endpoint_caps_its_body(live):
    before = live.deployment.stored()
    too_big = b'{"pad": "' + b"x" * (MAX_BODY * 3) + b'"}'
    deflated = zlib.compress(too_big)
    for endpoint in POST_ENDPOINTS:
        key = bearer(live.key_for(endpoint.kinds[0]))
        cases = {
            "content-length": (endpoint.call(live.url, key, too_big), 413),
            "chunked": (endpoint.call(live.url, key, chunks(too_big)), 413),
            "gzip-bomb": (endpoint.call(live.url, key, gzip_bomb(), **{
                "Content-Encoding": "gzip"}), 413),
            "chunked-gzip-bomb": (endpoint.call(live.url, key, chunks(gzip_bomb()), **{
                "Content-Encoding": "gzip"}), 413),
            # deflate is not accepted at all, so nothing is ever inflated
            "deflate": (endpoint.call(live.url, key, deflated, **{
                "Content-Encoding": "deflate"}), 415),
        }
        for name, (answer, status) in cases.items():
            assert answer.status == status, (endpoint.path, name, answer)
            assert answer.json()["error"], (endpoint.path, name)
    assert live.deployment.stored() == before


# --- absurd header values -----------------------------------------------------------------------

def raw_request(endpoint: Endpoint, header_lines: list[bytes]) -> bytes:
    body = b"" if endpoint.body is None else dumps(endpoint.body())
    lines = [f"{endpoint.method} {endpoint.path} HTTP/1.1".encode(), b"Host: 127.0.0.1",
             b"Connection: close", b"Content-Type: application/json",
             *(f"{name}: {value}".encode() for name, value in endpoint.extra_headers),
             *header_lines, f"Content-Length: {len(body)}".encode()]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def absurd_headers(key: str) -> dict[str, tuple[list[bytes], int]]:
    """name: (header lines, status)."""
    huge = "egis_" + "A" * 100_000
    # gunicorn refuses a header line over 8190 bytes; granian reads headers up to its 400 KiB
    # buffer, and egis refuses the unknown key.
    huge_status = 431 if WSGI_SERVER == "gunicorn" else 401
    return {
        "100-KB-x-api-key": ([f"X-API-Key: {huge}".encode()], huge_status),
        "100-KB-bearer": ([f"Authorization: Bearer {huge}".encode()], huge_status),
        "8-KB-bearer": ([f"Authorization: Bearer egis_{'A' * 8000}".encode()], 401),
        "newline-in-key": ([f"Authorization: Bearer {key}\nX-Injected: 1".encode()], 400),
        "carriage-return-in-key": ([f"Authorization: Bearer {key}\rX: 1".encode()], 400),
        "folded-key": ([f"Authorization: Bearer {key[:10]}\r\n {key[10:]}".encode()], 400),
        "nul-in-key": ([f"Authorization: Bearer {key[:10]}\0{key[10:]}".encode()], 400),
        "latin-1-key": ([b"Authorization: Bearer egis_\xe9\xff\xfe"], 401),
        "utf-8-key": ([f"X-API-Key: egis_{'é' * 40}".encode()], 401),
        "unknown-scheme": ([f"Authorization: Negotiate {key}".encode()], 401),
        "basic-scheme": ([b"Authorization: Basic dXNlcjpwYXNz"], 401),
        "bearer-with-spaces": ([f"Authorization: Bearer {key} {key}".encode()], 401),
        "two-authorizations": ([b"Authorization: Bearer egis_x", b"Authorization: Bearer y"],
                               401),
        "200-headers": ([f"X-Pad-{i}: {i}".encode() for i in range(200)], 431),
    }


# Refused by the server before egis sees them, in JSON by deploy/gunicorn.conf.py's worker.
# granian refuses them with an empty body, but for the bare newline (test below). Behind nginx,
# nginx refuses the CR, NUL and folded ones first, in JSON (tests/system/test_nginx.py), reads
# the bare newline as granian does, and passes 200 header fields on.
REFUSED_BY_THE_SERVER = ("newline-in-key", "carriage-return-in-key", "folded-key", "nul-in-key",
                         "200-headers")


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.skipif(
        WSGI_SERVER == "granian" and name in REFUSED_BY_THE_SERVER,
        reason="gunicorn's JSON refusals (deploy/gunicorn.conf.py); granian's: the test below"))
    for name in absurd_headers("k")])
def test_absurd_header_values_get_a_json_4xx(live, name):
    before = live.deployment.stored()
    for endpoint in ENDPOINTS:
        key = live.key_for(endpoint.kinds[0])
        lines, status = absurd_headers(key)[name]
        answer = send_raw(live.url, raw_request(endpoint, lines))
        assert answer.status == status, (endpoint.path, answer)
        assert answer.headers["content-type"] == "application/json"
        assert answer.json()["error"]
        assert key.split("_", 1)[1] not in answer.text()
    assert live.deployment.stored() == before
    log = live.deployment.server.log()  # the server's own refusals log no address either
    assert "Traceback" not in log and CLIENT_ADDRESS not in log


@pytest.mark.skipif(WSGI_SERVER != "granian", reason="what granian refuses itself")
def test_granian_refuses_malformed_headers_with_an_empty_4xx(live):
    """Not JSON, but never HTML, and nothing stored or logged. A bare LF ends a header line
    for granian (as RFC 9112 lets a recipient read it, and as nginx does): "newline-in-key" is
    a valid request with the key, and another header."""
    before = live.deployment.stored()
    statuses = {"carriage-return-in-key": 400, "folded-key": 400, "nul-in-key": 400,
                "200-headers": 431}
    for name, status in statuses.items():
        for endpoint in ENDPOINTS:
            key = live.key_for(endpoint.kinds[0])
            answer = send_raw(live.url, raw_request(endpoint, absurd_headers(key)[name][0]))
            assert (answer.status, answer.body) == (status, b""), (name, endpoint.path, answer)
            assert "content-type" not in answer.headers
    assert live.deployment.stored() == before
    validate = ENDPOINTS[2]
    lines = absurd_headers(live.key_for(WRITE))["newline-in-key"][0]
    answer = send_raw(live.url, raw_request(validate, lines))
    assert answer.status == 200 and answer.json()["valid"] is True
    log = live.deployment.server.log()
    assert "Traceback" not in log and CLIENT_ADDRESS not in log


def test_the_log_has_no_tracebacks(live, evidence):
    assert "Traceback" not in evidence.log and "[ERROR]" not in evidence.log

