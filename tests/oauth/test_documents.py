"""Client ID metadata documents (app/oauth/documents.py): fetched over real TLS from the test's
HTTPS server, with what is refused: redirects, more than 5 KiB, a certificate no trusted CA
signed, a document that names another client_id or breaks the redirect rules; servers that
stall (a connection that never completes, a TLS handshake never answered, headers and a body
trickled a byte a second), given up at the one 3 s deadline; every spelling of a non-global
address, refused before any connection unless EGIS_OAUTH_PRIVATE_CLIENT_URLS says otherwise;
hosts that do not parse (400, never 500); and one sentence for every reason. Then the cache (at
most 24 hours, by a test clock). The cap on fetches at once and the failures remembered, through
a live server under attack: tests/oauth/test_fetches.py.
"""
import logging
import socket
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from app.oauth import clients, documents, fetches
from models import OAuthClient
from models.site import utcnow
from tests.fixtures.helpers import db, wait_for
from tests.fixtures.oauth import (
    LOOPBACK_HOSTS,
    Answer,
    DocumentServer,
    StallingServer,
    in_process,
    make_certificates,
)

CALLBACK = "http://127.0.0.1:1/callback"


def refusal(url: str, allow_private: bool = True) -> str:
    """Why the document at `url` is refused (what the log says; the client is told REFUSAL)."""
    with pytest.raises(documents.DocumentError) as refused:
        documents.fetch(url, allow_private)
    return refused.value.reason


def test_a_document_is_fetched_and_checked(trusted, document_server: DocumentServer):
    url = document_server.serve_client("/fine.json", [CALLBACK], "Fine client",
                                       client_uri="https://ignored.example")
    fetched = documents.fetch(url, allow_private=True)
    assert fetched.metadata == {"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none",
                                "grant_types": ["authorization_code", "refresh_token"],
                                "response_types": ["code"], "scope": "stats:read",
                                "client_name": "Fine client"}
    assert fetched.cache_seconds == 24 * 3600


def test_what_a_document_may_not_be(trusted, document_server: DocumentServer):
    url = document_server.serve_client("/fine.json", [CALLBACK])
    assert documents.fetch(url, allow_private=True).metadata["redirect_uris"] == [CALLBACK]
    body = document_server.answers["/fine.json"].body
    cases = {
        "/moved.json": (Answer(b"", 302, {"Location": url}), "redirects are not followed"),
        "/gone.json": (Answer(b"{}", 404), "it answered HTTP 404"),
        "/big.json": (Answer(body[:-1] + b', "pad": "' + b"x" * 5200 + b'"}'),
                      "larger than 5120 bytes"),
        "/text.json": (Answer(b"<html>", 200, {"Content-Type": "text/html"}), "not JSON"),
        "/other.json": (Answer(body), "client_id is not the URL"),  # names /fine.json
    }
    for path, (answer, said) in cases.items():
        document_server.answers[path] = answer
        assert said in refusal(document_server.url(path)), path
    for path, redirect in (("/fragment.json", CALLBACK + "#x"), ("/js.json", "javascript:x()"),
                           ("/http.json", "http://client.example/callback"),
                           ("/source.json", "view-source:https://client.example/cb")):
        url = document_server.serve_client(path, [redirect])
        assert "redirect_uris: Not allowed" in refusal(url), path
    url = document_server.serve_client("/secret.json", [CALLBACK],
                                       token_endpoint_auth_method="client_secret_basic")
    assert "token_endpoint_auth_method" in refusal(url)
    url = document_server.serve_client("/rlo.json", [CALLBACK], "Good \u202eevil")
    assert "client_name: Not allowed" in refusal(url)
    # A document the host served, not one it failed to serve: the host is not held against
    # the other documents it serves.
    assert documents.fetch(document_server.serve_client("/after.json", [CALLBACK]), True)


TIMED_OUT = "it did not arrive within 3 s"
BODY = orjson.dumps({"client_id": "x", "redirect_uris": [CALLBACK]})


def test_a_server_that_stalls_is_given_up_at_the_one_deadline(
        trusted, certificates, document_server: DocumentServer):
    url = document_server.serve_client("/slow.json", [CALLBACK])
    document_server.answers["/slow.json"].delay = 0.5
    assert documents.fetch(url, allow_private=True).metadata["redirect_uris"] == [CALLBACK]

    # Headers a byte a second: each read gets its byte in time, the deadline ends it all. A
    # body the same way, after headers sent at once.
    headers = StallingServer("trickle", LOOPBACK_HOSTS[:1], certificates)
    body = StallingServer("trickle", LOOPBACK_HOSTS[1:2], certificates, trickled=BODY,
                          head=b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(BODY))
    # A TLS handshake nobody answers; a connection that never completes.
    unaccepting = StallingServer("unaccepting", LOOPBACK_HOSTS[2:3])
    full = StallingServer("full", LOOPBACK_HOSTS[3:4])
    try:
        for server, host in zip((headers, body, unaccepting, full), LOOPBACK_HOSTS, strict=False):
            assert refusal(server.url(host)) == TIMED_OUT, server.how
        for trickling in (headers, body):
            [held] = trickling.held
            # Cut at 3 s, about 3 bytes in: a per-read timeout would have let it send them all.
            assert held.cut and held.sent < 10 < len(trickling.trickled), held
        assert unaccepting.seen() == 1
    finally:
        for server in (headers, body, unaccepting, full):
            server.stop()
    document_server.answers["/slow.json"].delay = 4  # the body never comes
    assert refusal(url) == TIMED_OUT


def test_a_certificate_no_trusted_ca_signed_is_refused(trusted, document_server: DocumentServer,
                                                       tmp_path: Path):
    assert documents.fetch(document_server.serve_client("/fine.json", [CALLBACK]), True)
    stranger = DocumentServer(make_certificates(tmp_path / "stranger"))
    try:
        url = stranger.serve_client("/fine.json", [CALLBACK])
        assert refusal(url) == "its TLS certificate could not be verified"
    finally:
        stranger.stop()


def resolving(monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[str]]) -> None:
    """getaddrinfo answers `answers` for those names (a DNS of the test's own); a name
    answered with no address does not resolve."""
    real = socket.getaddrinfo

    def getaddrinfo(host: str, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        if host not in answers:
            return real(host, port, *args, **kwargs)
        if not answers[host]:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM, 6,
                 "", (address, port)) for address in answers[host]]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


# Every spelling of a loopback, private or otherwise non-global address a URL may hold.
NON_GLOBAL_HOSTS = [
    "127.0.0.1", "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "0.0.0.0", "localhost",
    "[::1]", "[::]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::127.0.0.1]",
    "[::ffff:0:7f00:1]", "[64:ff9b::7f00:1]", "[64:ff9b::a9fe:a9fe]", "[2002:7f00:1::1]",
    "[2001:0:4136:e378:8000:63bf:3fff:fdd2]", "[fec0::1]", "[fe80::1]", "[fd00::1]",
    "169.254.169.254", "10.0.0.1", "192.0.0.8", "100.64.0.1",
    # Names whose DNS answers so (the resolver of the test's own).
    "client.test", "mixed.test", "mapped.test", "translated.test", "nat64.test", "6to4.test",
    "sitelocal.test"]
DNS = {"client.test": ["127.0.0.1"], "mixed.test": ["93.184.215.14", "127.0.0.1"],
       "mapped.test": ["::ffff:10.0.0.1"], "translated.test": ["::ffff:0:7f00:1"],
       "nat64.test": ["64:ff9b::7f00:1"], "6to4.test": ["2002:a00:1::1"],
       "sitelocal.test": ["fec0::1"]}


def test_every_non_global_spelling_is_refused_before_connecting(
        trusted, document_server: DocumentServer, monkeypatch: pytest.MonkeyPatch):
    # The name is resolved once, by this resolver, and the socket connects to what it said:
    # client.test exists only here, and its certificate is checked against that name.
    resolving(monkeypatch, DNS)
    path = "/named.json"
    url = f"https://client.test:{document_server.port}{path}"
    document_server.answers[path] = Answer(orjson.dumps({"client_id": url,
                                                         "redirect_uris": [CALLBACK]}))
    assert documents.fetch(url, allow_private=True).metadata["redirect_uris"] == [CALLBACK]

    listener = StallingServer("silent")  # whatever connects to it is counted
    try:
        port = listener.ports["127.0.0.1"]
        with socket.create_connection(("127.0.0.1", port)):
            pass
        wait_for(lambda: listener.seen() == 1, what="the listener to count a connection")
        for host in NON_GLOBAL_HOSTS:
            fetches.failed_hosts.forget_all()  # each judged, not answered from memory
            assert refusal(f"https://{host}:{port}/client.json", False) == documents.NOT_GLOBAL
        assert listener.seen() == 1  # refused before any connection
    finally:
        listener.stop()


# Hosts that do not parse, in a client_id: never a fetch, never a 500.
MALFORMED = ["https://a..b/x", f"https://{'a' * 64}.example/x", "https://a b/x",
             "https://exa mple.example/x", "https://-a.example/x", f"https://{'a.' * 127}a/x",
             "https://[::1/x", "https://[v1.x]/x", "https://[fe80::1%25lo]/x",
             "https://client.example:99999/x", "https://client.example:port/x",
             "https://client.example", "https://client.example/", "https://u:p@client.example/x",
             "https://client.example/x#y", "https://client.example/" + "x" * 2000]


def test_a_client_url_that_does_not_parse_is_a_400_never_a_500(
        trusted, make_app, make_site, document_server: DocumentServer):
    app = make_app(OAUTH_PRIVATE_CLIENT_URLS=True)
    make_site("std.example", "standard")
    with in_process(app) as make:
        me = make(CALLBACK)
        me.client_id = document_server.serve_client("/parses.json", [CALLBACK], "Parses")
        assert me.http.get("/oauth/authorize", params=me.authorization()).status_code == 200
        known = me.exchange("no-such-code")
        assert (known.status_code, known.json()["error"]) == (400, "invalid_grant")
        for client_id in [*MALFORMED, "https://client.example/\x00", "nul\x00"]:
            me.client_id = client_id
            page = me.http.get("/oauth/authorize", params=me.authorization())
            assert page.status_code == 400 and "Location" not in page.headers, client_id
            assert page.headers["Content-Type"].startswith("text/html")
            token = me.exchange("no-such-code")
            assert token.status_code in (400, 401), (client_id, token.text)
            if client_id in MALFORMED:
                assert documents.MALFORMED in page.text
                assert token.json() == {"error": "invalid_request",
                                        "error_description": documents.MALFORMED}
            revoked = me.http.post("/oauth/revoke", data={"token": "x", "client_id": client_id})
            assert (revoked.status_code, revoked.json()) == (200, {}), client_id
    assert document_server.hits["/parses.json"] == 1


def test_one_sentence_whatever_the_reason(trusted, make_app, make_site, certificates,
                                          document_server, monkeypatch, caplog, tmp_path):
    """Not resolving, non-global, refused connection, bad TLS, no answer, HTTP 404, not JSON:
    the page and the token endpoint's error are the same; only the log says why."""
    make_site("std.example", "standard")
    fine = document_server.serve_client("/one.json", [CALLBACK], "One sentence")
    resolving(monkeypatch, {"nowhere.test": []})
    stranger = DocumentServer(make_certificates(tmp_path / "stranger"))
    silent = StallingServer("silent", LOOPBACK_HOSTS[4:5])
    closed = StallingServer("silent", LOOPBACK_HOSTS[5:6])
    closed.stop()  # nothing listens there any more: the connection is refused
    document_server.answers["/text.json"] = Answer(b"<html>", 200, {"Content-Type": "text/html"})
    reasons = {  # the URL, whether private addresses are allowed, what the log says
        "not resolving": ("https://nowhere.test/client.json", True, "does not resolve"),
        "non-global": (fine, False, documents.NOT_GLOBAL),
        "refused": (closed.url(LOOPBACK_HOSTS[5]), True, "ConnectionRefusedError"),
        "bad TLS": (stranger.serve_client("/x.json", [CALLBACK]), True, "certificate"),
        "no answer": (silent.url(LOOPBACK_HOSTS[4]), True, TIMED_OUT),
        "404": (document_server.url("/none.json"), True, "HTTP 404"),
        "not JSON": (document_server.url("/text.json"), True, "not JSON"),
    }
    pages, errors = set(), set()
    try:
        for app_allows in (True, False):
            app = make_app(OAUTH_PRIVATE_CLIENT_URLS=app_allows)
            with in_process(app) as make:
                me = make(CALLBACK)
                me.client_id = fine
                valid = me.http.get("/oauth/authorize", params=me.authorization())
                assert valid.status_code == (200 if app_allows else 400)
                with db(app):
                    OAuthClient.delete().execute()  # fetched again each time below
                for name, (url, allowed, logged) in reasons.items():
                    if allowed != app_allows:
                        continue
                    me.client_id = url
                    fetches.failed_hosts.forget_all()  # each case fetched, not remembered
                    caplog.clear()
                    with caplog.at_level(logging.INFO, "app.oauth.documents"):
                        page = me.http.get("/oauth/authorize", params=me.authorization())
                    assert logged in caplog.text, (name, caplog.text)
                    assert page.status_code == 400 and "Location" not in page.headers, name
                    pages.add(page.text)
                    errors.add(me.exchange("no-such-code").text)
    finally:
        stranger.stop()
        silent.stop()
    [page] = pages
    assert documents.REFUSAL in page
    assert [orjson.loads(error) for error in errors] == [
        {"error": "invalid_client", "error_description": documents.REFUSAL}]


def test_the_document_is_cached_at_most_a_day(trusted, make_app, make_site, document_server,
                                              monkeypatch: pytest.MonkeyPatch):
    app = make_app(OAUTH_PRIVATE_CLIENT_URLS=True)
    make_site("std.example", "standard")
    with in_process(app) as make:
        me = make(CALLBACK)
        me.client_id = document_server.serve_client("/cached.json", [CALLBACK], "Cached client")
        for _ in range(2):
            assert me.http.get("/oauth/authorize", params=me.authorization()).status_code == 200
        assert document_server.hits["/cached.json"] == 1
        later = utcnow() + timedelta(hours=24, seconds=1)
        monkeypatch.setattr(clients, "utcnow", lambda: later)
        assert me.http.get("/oauth/authorize", params=me.authorization()).status_code == 200
        assert document_server.hits["/cached.json"] == 2
        # A shorter max-age is kept; no-store is fetched every time.
        document_server.answers["/cached.json"].headers["Cache-Control"] = "no-store"
        monkeypatch.setattr(clients, "utcnow", lambda: later + timedelta(hours=25))
        for expected in (3, 4):
            assert me.http.get("/oauth/authorize", params=me.authorization()).status_code == 200
            assert document_server.hits["/cached.json"] == expected
