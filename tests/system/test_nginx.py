"""deploy/nginx.conf, as shipped, run by Debian's nginx in front of the deployed server
(gunicorn, or granian with EGIS_TEST_WSGI=granian; 2 workers, Redis limits,
EGIS_TRUSTED_PROXIES=1), on free loopback ports; everything stopped by PID. egis is exposed only
behind it: slow clients are nginx's to hold, and the docs say so.

Clients connect from other loopback addresses (127.0.0.2, 127.0.0.3, ...) than nginx's own
(127.0.0.1), so a limit that counted nginx's address instead of the client's would show.
"""
import gzip
import http.client
import json
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fixtures import ROOT
from tests.fixtures.database import REDIS_URL
from tests.fixtures.helpers import wait_for
from tests.fixtures.servers import WSGI_SERVER, LiveServer, free_port, launch, stop_server
from tests.fixtures.tracking import CHROME_UA, batch, dumps, stored_counts, tallies

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
DEPLOYED = ROOT / "deploy" / "nginx.conf"
FIRST_PARTY = ROOT / "deploy" / "nginx-first-party.conf"
MAX_BODY = 1_048_576  # EGIS_MAX_BODY_BYTES's default
pytestmark = pytest.mark.slow


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict:
        assert self.headers["content-type"] == "application/json", (self.status, self.headers)
        return json.loads(self.body)


def send(port: int, method: str, path: str, body: bytes | None = None,
         headers: dict[str, str] | None = None, source: str = "127.0.0.2") -> Answer:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20,
                                            source_address=(source, 0))
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return Answer(response.status, {k.lower(): v for k, v in response.getheaders()},
                      response.read())
    finally:
        connection.close()


class Nginx:
    """Debian's nginx with deploy/nginx.conf (ports, upstream and paths swapped for the test's
    own) plus a site's server that includes deploy/nginx-first-party.conf."""

    def __init__(self, directory: Path, upstream: str) -> None:
        self.directory = directory
        self.port, self.site_port = free_port(), free_port()
        self.process: subprocess.Popen | None = None
        directory.mkdir()
        (directory / "egis.conf").write_text(self._deployed(upstream))
        user = "user root;" if os.geteuid() == 0 else ""  # workers may read tmp_path
        temp_paths = "".join(f"{kind}_temp_path {directory / kind};"
                             for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        (directory / "nginx.conf").write_text(f"""
{user}
worker_processes 1;
error_log {directory / "error.log"};
events {{ worker_connections 256; }}
http {{
    {temp_paths}
    include {directory / "egis.conf"};
    server {{
        listen 127.0.0.1:{self.site_port};
        server_name std.example;
        include {FIRST_PARTY};
    }}
}}
""")

    def _deployed(self, upstream: str) -> str:
        text = DEPLOYED.read_text()
        for shipped, here in (("listen 80;", f"listen 127.0.0.1:{self.port};"),
                              ("server 127.0.0.1:8000;", f"server {upstream};"),
                              ("/var/cache/nginx/egis", str(self.directory / "cache")),
                              ("/var/log/nginx/egis.access.log",
                               str(self.directory / "access.log"))):
            assert text.count(shipped) == 1, shipped
            text = text.replace(shipped, here)
        return text

    def start(self) -> None:
        self.process = subprocess.Popen(
            [NGINX, "-p", str(self.directory), "-c", str(self.directory / "nginx.conf"),
             "-g", f"daemon off; pid {self.directory / 'nginx.pid'};"],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"nginx did not start:\n{self.error_log()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def error_log(self) -> str:
        path = self.directory / "error.log"
        return path.read_text(errors="replace") if path.exists() else ""


@dataclass
class Stack:
    nginx: Nginx
    upstream: LiveServer
    site: object

    def post_events(self, body: bytes, source: str = "127.0.0.2", port: int | None = None,
                    path: str = "/api/events", **headers: str) -> Answer:
        return send(port or self.nginx.port, "POST", path, body,
                    {"Content-Type": "application/json", **self.site.write_headers(**headers)},
                    source=source)


@pytest.fixture
def stack(start_server, std_site, redis_prefix, tmp_path) -> Stack:
    if not Path(NGINX).exists():
        pytest.fail("nginx is not installed: `bash .ci/run` installs it (apt-get install nginx)")
    server = start_server(workers=2, deploy_config=True, env={
        "EGIS_TRUSTED_PROXIES": "1", "EGIS_RATELIMIT_STORAGE_URI": REDIS_URL,
        "EGIS_RATELIMIT_KEY_PREFIX": redis_prefix, "EGIS_RATE_LIMIT_IP": "3/minute",
        # Tallies written at once: what egis did not count (nginx answered) is then plain to see
        # right after the request.
        "EGIS_TALLY_FLUSH_SECONDS": "0"})
    nginx = Nginx(tmp_path / "nginx", server.url.removeprefix("http://"))
    nginx.start()
    yield Stack(nginx, server, std_site)
    nginx.stop()


# How deploy/nginx.conf says to bind each server to a Unix socket instead.
UNIX_SOCKET_BINDS = {"gunicorn": ("GUNICORN_BIND", "unix:{}"), "granian": ("GRANIAN_UDS", "{}")}


def test_over_a_unix_socket_as_the_config_documents(app, std_site, migrated, redis_prefix,
                                                    tmp_path):
    """The deployed server bound to a Unix socket, nginx's upstream `server unix:...;`: ingest
    goes through, and the per-IP limit still counts each client, not the socket."""
    variable, value = UNIX_SOCKET_BINDS[WSGI_SERVER]
    path = tmp_path / "egis.sock"
    shipped = DEPLOYED.read_text()
    assert f"{variable}={value.format('/run/egis/egis.sock')}" in shipped
    assert "`server unix:/run/egis/egis.sock;`" in shipped
    command = ([sys.executable, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py",
                "--no-control-socket", "wsgi:app"] if WSGI_SERVER == "gunicorn"
               else [sys.executable, "deploy/granian_server.py"])
    env = {variable: value.format(path), "GUNICORN_WORKERS": "2", "GRANIAN_WORKERS": "2",
           "EGIS_TRUSTED_PROXIES": "1", "EGIS_RATELIMIT_STORAGE_URI": REDIS_URL,
           "EGIS_RATELIMIT_KEY_PREFIX": redis_prefix, "EGIS_RATE_LIMIT_IP": "2/minute"}
    server = launch(command, None, migrated, tmp_path / "server.log", env,
                    granian_workers=2 if WSGI_SERVER == "granian" else 0, unix_socket=path)
    # nginx's workers run as another user (www-data) in production: they need write access.
    assert path.stat().st_mode & 0o666 == 0o666, oct(path.stat().st_mode)
    nginx = Nginx(tmp_path / "nginx", f"unix:{path}")
    stack = Stack(nginx, server, std_site)
    try:
        nginx.start()
        statuses = [stack.post_events(dumps(batch())).status for _ in range(3)]
        other_client = stack.post_events(dumps(batch(2)), source="127.0.0.3")
    finally:
        nginx.stop()
        stop_server(server)
    assert statuses == [200, 200, 429]
    assert (other_client.status, other_client.json()) == (200, {"success": True, "count": 2})
    assert stored_counts(app)["events"] == 4
    assert "Traceback" not in server.log()


def test_per_ip_limits_count_the_client_not_nginx_and_ignore_a_spoofed_header(app, stack):
    spoofs = ["198.51.100.1", "198.51.100.2", "198.51.100.3, 203.0.113.9", "10.0.0.1"]
    statuses = [stack.post_events(dumps(batch()), **{"X-Forwarded-For": spoof}).status
                for spoof in spoofs]
    assert statuses == [200, 200, 200, 429]
    # Another client has its own budget: the limit did not count nginx's one address.
    assert stack.post_events(dumps(batch()), source="127.0.0.3").status == 200
    # The first-party path (the site's own server, one hop) counts visitors the same way.
    first_party = [stack.post_events(dumps(batch()), source="127.0.0.4",
                                     port=stack.nginx.site_port, path="/stats/api/events",
                                     Origin="https://std.example",
                                     **{"User-Agent": CHROME_UA}).status
                   for _ in range(4)]
    assert first_party == [200, 200, 200, 429]
    assert stored_counts(app)["events"] == 3 + 1 + 3


def test_bodies_gzip_passes_through_and_every_413_is_json(app, stack):
    answer = stack.post_events(gzip.compress(dumps(batch(3))), **{"Content-Encoding": "gzip"})
    assert (answer.status, answer.json()) == (200, {"success": True, "count": 3})

    # Over egis's cap, under nginx's: egis answers, and counts it against the site.
    over_egis_cap = b"{" + b" " * (MAX_BODY + 100_000) + b"}"
    answer = stack.post_events(over_egis_cap, source="127.0.0.3")
    assert (answer.status, answer.json()) == (413, {"error": "The request body is too large."})
    bomb = gzip.compress(b"0" * (2 * MAX_BODY))  # small on the wire, too large decoded
    answer = stack.post_events(bomb, source="127.0.0.4", **{"Content-Encoding": "gzip"})
    assert (answer.status, answer.json()) == (413, {
        "error": f"The request body is larger than {MAX_BODY} bytes (after gzip decoding)."})
    assert tallies(app) == {"rejected_413": 2}

    # Over nginx's cap: nginx stops reading and answers, in the same words.
    over_nginx_cap = b"{" + b" " * (3 * MAX_BODY) + b"}"
    answer = stack.post_events(over_nginx_cap, source="127.0.0.5")
    assert (answer.status, answer.json()) == (413, {"error": "The request body is too large."})
    assert tallies(app) == {"rejected_413": 2}
    assert stored_counts(app)["events"] == 3


def _raw(port: int, data: bytes) -> Answer:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value for name, value in
               (line.split(": ", 1) for line in header_lines)}
    return Answer(int(status_line.split()[1]), headers, body)


def _request(*lines: bytes) -> bytes:
    return b"\r\n".join([*lines, b"Connection: close", b"", b""])


def test_every_error_nginx_answers_is_json(stack):
    port = stack.nginx.port
    get = b"GET /api/validate HTTP/1.1"
    cases = {
        "uri-too-long": (send(port, "GET", "/" + "a" * 10_000), 414),
        "header-too-large": (send(port, "GET", "/healthz", headers={"X-Big": "b" * 10_000}), 400),
        "metrics-from-outside": (send(port, "GET", "/metrics"), 403),
        "internal-error-page": (send(port, "GET", "/_egis_error"), 404),
        "two-hosts": (_raw(port, _request(b"GET / HTTP/1.1", b"Host: a", b"Host: b")), 400),
        "not-http": (_raw(port, _request(b"GARBAGE", b"Host: a")), 400),
        "http-9": (_raw(port, _request(b"GET / HTTP/9.9", b"Host: a")), 505),
        "transfer-encoding-gzip": (_raw(port, _request(
            b"POST /api/events HTTP/1.1", b"Host: a", b"Transfer-Encoding: gzip")), 501),
        # Sent to the server directly, refused by it (JSON from gunicorn, an empty body from
        # granian, which passes the 100 KB header on to egis): nginx refuses them first.
        "100-KB-header": (_raw(port, _request(get, b"Host: a", b"X-API-Key: " + b"A" * 100_000)),
                          400),
        "carriage-return-in-header": (_raw(port, _request(get, b"Host: a",
                                                          b"X-API-Key: egis_x\rX: 1")), 400),
        "nul-in-header": (_raw(port, _request(get, b"Host: a", b"X-API-Key: egis_\0x")), 400),
        "folded-header": (_raw(port, _request(get, b"Host: a", b"X-API-Key: egis_x", b" y")),
                          400),
    }
    for name, (answer, status) in cases.items():
        assert answer.status == status, name
        assert set(answer.json()) == {"error"}, name
    assert cases["two-hosts"][0].json() == {"error": "The request is malformed."}

    # egis's own errors pass through untouched; Prometheus scrapes from the host itself.
    answer = send(port, "GET", "/nope")
    assert (answer.status, answer.json()) == (404, {"error": "No such endpoint."})
    assert "x-request-id" in answer.headers
    scrape = send(port, "GET", "/metrics", source="127.0.0.1")
    assert scrape.status == 200
    assert scrape.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"

    stack.upstream.process.terminate()  # by PID: egis goes away behind nginx
    stack.upstream.process.wait(timeout=20)
    answer = stack.post_events(dumps(batch()))
    assert answer.status == 502 and answer.headers["retry-after"] == "5"
    assert answer.json() == {"error": "The service is unavailable; nothing was stored, retry "
                                      "later."}


def test_more_header_fields_than_the_server_reads_are_refused(stack):
    """nginx counts no header fields: over 100 reach the server, which refuses them with 431,
    in JSON from deploy/gunicorn.conf.py; granian's answer has an empty body (README)."""
    pads = [f"X-Pad-{number}: {number}".encode() for number in range(200)]
    answer = _raw(stack.nginx.port, _request(b"GET /api/validate HTTP/1.1", b"Host: a", *pads))
    assert answer.status == 431
    if WSGI_SERVER == "gunicorn":
        assert set(answer.json()) == {"error"}
    else:
        assert answer.body == b"" and "content-type" not in answer.headers


def test_the_request_id_is_nginxs_in_both_logs(stack):
    answer = stack.post_events(dumps(batch()))
    request_id = answer.headers["x-request-id"]
    access_log = stack.nginx.directory / "access.log"
    deadline = time.monotonic() + 10  # nginx writes the line once the answer has gone out
    while request_id not in access_log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert request_id in access_log.read_text()
    assert "127.0.0.2" not in access_log.read_text()
    lines = [json.loads(line) for line in stack.upstream.log().splitlines()
             if line.startswith("{")]
    assert any(line.get("request_id") == request_id for line in lines)


def test_tracker_js_is_served_from_nginxs_cache(stack):
    first = send(stack.nginx.port, "GET", "/tracker.js")
    if first.status == 404:
        pytest.skip("this egis has no /tracker.js route yet: nothing to cache")
    assert first.status == 200 and first.headers["x-cache-status"] in ("MISS", "EXPIRED")
    second = send(stack.nginx.port, "GET", "/tracker.js")
    assert second.headers["x-cache-status"] == "HIT" and second.body == first.body
    stack.upstream.process.terminate()  # by PID: the cached copy still serves
    stack.upstream.process.wait(timeout=20)
    third = send(stack.nginx.port, "GET", "/tracker.js")
    assert third.status == 200 and third.body == first.body
    first_party = send(stack.nginx.site_port, "GET", "/stats/tracker.js")
    assert first_party.status == 200 and first_party.body == first.body


def test_oauth_passes_through_with_its_pages_and_no_query_in_the_log(stack):
    """/.well-known/oauth-* and /oauth/* reach egis as they are: the documents, a registration,
    the authorization endpoint's own 400 page (not nginx's JSON), the challenge of /api/mcp."""
    documents = [send(stack.nginx.port, "GET", path) for path in (
        "/.well-known/oauth-protected-resource/api/mcp", "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-authorization-server")]
    assert [answer.status for answer in documents] == [200, 200, 200]
    # nginx passes Host as $host (no port) and the scheme it was asked on: PUBLIC as seen from
    # outside (set EGIS_PUBLIC_URL where nginx listens on another port than the scheme's).
    assert documents[2].json()["issuer"] == "http://127.0.0.1"
    assert documents[0].json()["resource"] == "http://127.0.0.1/api/mcp"
    registered = send(stack.nginx.port, "POST", "/oauth/register",
                      dumps({"redirect_uris": ["http://127.0.0.1:1/cb"]}),
                      {"Content-Type": "application/json"})
    assert registered.status == 201 and registered.json()["token_endpoint_auth_method"] == "none"
    secret_looking = "state=do-not-log-me"
    page = send(stack.nginx.port, "GET", f"/oauth/authorize?client_id=nobody&{secret_looking}")
    assert page.status == 400 and page.headers["content-type"].startswith("text/html")
    assert b"This app cannot connect" in page.body
    challenged = send(stack.nginx.port, "POST", "/api/mcp", b"{}",
                      {"Content-Type": "application/json"})
    assert challenged.status == 401 and challenged.headers["www-authenticate"].startswith(
        'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource/api/mcp"')
    access_log = stack.nginx.directory / "access.log"
    deadline = time.monotonic() + 10
    while "/oauth/authorize" not in access_log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "/oauth/authorize" in access_log.read_text()
    assert secret_looking not in access_log.read_text() + stack.upstream.log()


class SlowLoris:
    """`count` sockets that each begin a request and send one more header line a second, never
    ending it (the slow-loris attack): a server that reads a request's headers in one of a few
    threads gives each socket a thread for as long as it trickles."""

    def __init__(self, port: int, count: int, source: str = "127.0.0.9") -> None:
        self.sockets = [socket.create_connection(("127.0.0.1", port), timeout=5,
                                                 source_address=(source, 0))
                        for _ in range(count)]
        self.rounds = 0  # header lines sent by every socket so far
        self.failures: list[OSError] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._trickle, daemon=True)

    def __enter__(self) -> "SlowLoris":
        for sock in self.sockets:
            sock.sendall(b"POST /api/events HTTP/1.1\r\nHost: ingest.example\r\n")
        self._thread.start()
        return self

    def _trickle(self) -> None:
        while not self._stop.is_set():
            for sock in self.sockets:
                try:
                    sock.sendall(f"X-Slow-{self.rounds}: {self.rounds}\r\n".encode())
                except OSError as error:
                    self.failures.append(error)
            self.rounds += 1
            self._stop.wait(1)

    def all_open(self) -> bool:
        """Whether the server has neither answered nor closed any of the sockets: none has
        anything to read (an answer, a 408 say, or the end of the connection)."""
        readable, _, _ = select.select(self.sockets, [], [], 0)
        return not readable and not self.failures

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        for sock in self.sockets:
            sock.close()


def test_slow_loris_sockets_hold_nginx_not_ingest(app, stack):
    """16 slow-loris sockets, twice the server's 2 x 4 threads: nginx reads every request's
    headers itself (at most 10 s: client_header_timeout) and passes on only whole requests, so
    ingest through the same nginx goes on answering, every request while the 16 sockets are
    still open and trickling."""
    assert stack.post_events(dumps(batch())).status == 200  # ingest through nginx, unattacked
    with SlowLoris(stack.nginx.port, 16) as loris:
        wait_for(lambda: loris.rounds >= 2, what="two header lines from each slow socket")
        answers = [stack.post_events(dumps(batch(2)), source=f"127.0.1.{number}")
                   for number in range(1, 11)]
        held_open = loris.all_open()
        rounds = loris.rounds
    assert [(answer.status, answer.json()) for answer in answers] == [
        (200, {"success": True, "count": 2})] * 10
    assert held_open, "a slow socket was answered or closed before ingest was done"
    assert rounds >= 2
    assert stored_counts(app)["events"] == 1 + 20
    assert "Traceback" not in stack.upstream.log()


# Where the deployment is described: each says that egis is exposed only behind nginx.
EXPOSURE_DOCS = ("README.md", "deploy/gunicorn.conf.py", "deploy/granian_server.py",
                 "deploy/quickstart.sh", "deploy/nginx.conf", "deploy/SCALING.md")


@pytest.mark.parametrize("name", EXPOSURE_DOCS)
def test_the_docs_say_egis_is_exposed_only_behind_the_shipped_nginx(name):
    words = re.sub(r"[\s#>*`]+", " ", (ROOT / name).read_text())
    assert "exposed only behind the shipped nginx" in words, name
    assert "deploy/nginx.conf" in words, name
