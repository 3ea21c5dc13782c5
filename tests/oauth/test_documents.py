"""Client ID metadata documents (app/oauth/documents.py): fetched over real TLS from the test's
HTTPS server, with what is refused: redirects, more than 5 KiB, more than 3 s, a certificate
no trusted CA signed, a document that names another client_id or breaks the redirect rules, and
a host on a non-global address unless EGIS_OAUTH_PRIVATE_CLIENT_URLS says otherwise. Then the
cache (at most 24 hours, by a test clock) and the 400 page a refused document gives.
"""
import socket
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from app.oauth import clients, documents
from models import OAuthClient
from models.site import utcnow
from tests.helpers import db
from tests.oauth.conftest import Answer, DocumentServer, in_process, make_certificates

CALLBACK = "http://127.0.0.1:1/callback"


def refusal(url: str, allow_private: bool = True) -> str:
    with pytest.raises(documents.DocumentError) as refused:
        documents.fetch(url, allow_private)
    return str(refused.value)


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
                           ("/http.json", "http://client.example/callback")):
        url = document_server.serve_client(path, [redirect])
        assert "redirect_uris: Not allowed" in refusal(url), path
    url = document_server.serve_client("/secret.json", [CALLBACK],
                                 token_endpoint_auth_method="client_secret_basic")
    assert "token_endpoint_auth_method" in refusal(url)


def test_a_slow_document_is_given_up_after_3_seconds(trusted, document_server: DocumentServer):
    url = document_server.serve_client("/slow.json", [CALLBACK])
    document_server.answers["/slow.json"].delay = 0.5
    assert documents.fetch(url, allow_private=True).metadata["redirect_uris"] == [CALLBACK]
    document_server.answers["/slow.json"].delay = 4
    assert "did not arrive within 3 s" in refusal(url)


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
    """getaddrinfo answers `answers` for those names (a DNS of the test's own)."""
    real = socket.getaddrinfo

    def getaddrinfo(host: str, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        if host not in answers:
            return real(host, port, *args, **kwargs)
        return [(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM, 6,
                 "", (address, port)) for address in answers[host]]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def test_non_global_addresses_are_refused_unless_allowed(trusted, document_server: DocumentServer,
                                                         monkeypatch: pytest.MonkeyPatch):
    # The name is resolved once, by this resolver, and the socket connects to what it said:
    # client.test exists only here, and its certificate is checked against that name.
    resolving(monkeypatch, {"client.test": ["127.0.0.1"],
                            "mixed.test": ["93.184.215.14", "127.0.0.1"],
                            "mapped.test": ["::ffff:10.0.0.1"]})
    path = "/named.json"
    url = f"https://client.test:{document_server.port}{path}"
    document_server.answers[path] = Answer(orjson.dumps({"client_id": url,
                                                         "redirect_uris": [CALLBACK]}))
    assert documents.fetch(url, allow_private=True).metadata["redirect_uris"] == [CALLBACK]
    hits = document_server.hits[path]

    assert refusal(url, allow_private=False) == documents.NOT_GLOBAL
    assert refusal(document_server.url(path), allow_private=False) == documents.NOT_GLOBAL
    # Not just the first answer: a global one first and a loopback one after is refused too.
    for host in ("mixed.test", "mapped.test", "localhost"):
        url = f"https://{host}:{document_server.port}{path}"
        assert refusal(url, allow_private=False) == documents.NOT_GLOBAL
    assert document_server.hits[path] == hits  # refused before any connection


@pytest.mark.parametrize(("address", "is_global"), [
    ("93.184.215.14", True), ("2606:2800:21f:cb07:6820:80da:af6b:8b2c", True),
    ("127.0.0.1", False), ("10.1.2.3", False), ("172.16.0.1", False), ("192.168.1.1", False),
    ("169.254.169.254", False), ("100.64.0.1", False), ("0.0.0.0", False), ("::1", False),
    ("fe80::1%eth0", False), ("fd00::1", False), ("::ffff:127.0.0.1", False),
    ("224.0.0.1", False), ("192.0.2.1", False)])
def test_what_counts_as_global(address, is_global):
    assert documents.is_global(address) is is_global


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


def test_a_private_address_client_url_is_refused_with_a_page(trusted, make_app, make_site,
                                                             document_server: DocumentServer):
    make_site("std.example", "standard")
    url = document_server.serve_client("/private.json", [CALLBACK], "Private client")
    for allowed, status in ((True, 200), (False, 400)):
        app = make_app(OAUTH_PRIVATE_CLIENT_URLS=allowed)
        with in_process(app) as make:
            me = make(CALLBACK)
            me.client_id = url
            answer = me.http.get("/oauth/authorize", params=me.authorization())
            assert answer.status_code == status, answer.text
            assert "Location" not in answer.headers
            if allowed:
                assert "Private client" in answer.text
                with db(app):  # fetched again below, not read from the cache
                    OAuthClient.delete().execute()
            else:
                assert "metadata document cannot be used" in answer.text
                assert "non-global address" in answer.text
