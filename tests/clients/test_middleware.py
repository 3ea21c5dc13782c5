"""CrawlerReporter around a Flask app, reporting to a real egis: every request passes through
unchanged; document fetches that are not ordinary browser navigations are reported (queued on
the client, sent by its thread); the site keeps answering when egis is down."""
import logging

import pytest
from egis_client import Client, CrawlerReporter
from flask import Flask, Response

from tests.fixtures.clients import stored
from tests.fixtures.servers import free_port

pytestmark = pytest.mark.slow
CHROME = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/131.0.0.0 Safari/537.36")
GPTBOT = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2)"
NAVIGATION = {"User-Agent": CHROME, "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}


def make_site() -> Flask:
    site = Flask("site")

    @site.get("/")
    @site.get("/docs/<page>")
    def page(page: str = "home") -> Response:
        return Response(f"<h1>{page}</h1>", headers={"X-Site": "yes"}, mimetype="text/html")

    @site.get("/logo.png")
    def logo() -> Response:
        return Response(b"\x89PNG", mimetype="image/png")

    @site.post("/contact")
    def contact() -> Response:
        return Response("<p>thanks</p>", status=201, mimetype="text/html")

    return site


# (method, path, headers): reported or not.
REQUESTS = [
    ("GET", "/", {"User-Agent": GPTBOT}, True),  # a crawler: no fetch metadata at all
    ("GET", "/docs/a?token=secret", {"User-Agent": "curl/8.5.0"}, True),  # no Mozilla/
    ("HEAD", "/docs/b", {"User-Agent": "python-requests/2.32"}, True),
    ("GET", "/docs/c", {**NAVIGATION, "Sec-Fetch-Mode": "no-cors"}, True),  # not navigate
    ("GET", "/docs/d", {**NAVIGATION, "User-Agent": GPTBOT}, True),  # names a bot
    ("GET", "/docs/e", NAVIGATION, False),  # an ordinary browser navigation
    ("GET", "/docs/f", {**NAVIGATION, "Sec-Fetch-Dest": "iframe", "User-Agent": GPTBOT},
     False),  # not a document fetch
    ("GET", "/logo.png", {"User-Agent": GPTBOT}, False),  # not a document
    ("POST", "/contact", {"User-Agent": GPTBOT}, False),
]


def answers(site: Flask) -> list[tuple[int, bytes, list[tuple[str, str]]]]:
    client = site.test_client()
    return [(r.status_code, r.get_data(), sorted(r.headers.items()))
            for r in (client.open(path, method=method, headers=headers,
                                  environ_base={"REMOTE_ADDR": "203.0.113.40"})
                      for method, path, headers, _reported in REQUESTS)]


def test_reports_the_bot_like_document_fetches_and_changes_no_answer(egis, make_client):
    client = make_client()
    plain = answers(make_site())
    site = make_site()
    site.wsgi_app = CrawlerReporter(site.wsgi_app, client)
    assert answers(site) == plain
    assert client.flush(timeout=30)
    hits = stored(egis.app)["crawl_hits"]
    assert [(h.path, h.host, h.sec_fetch_mode) for h in hits] == [
        ("/", "localhost", None), ("/docs/a", "localhost", None), ("/docs/b", "localhost", None),
        ("/docs/c", "localhost", "no-cors"), ("/docs/d", "localhost", "navigate")]
    assert [h.crawler for h in hits] == ["GPTBot", "curl", "Python Requests", None, "GPTBot"]
    assert {h.network for h in hits} == {"203.0.113.0/24"}


def test_the_site_keeps_answering_when_egis_is_down(egis, caplog):
    down = Client(host=f"http://127.0.0.1:{free_port()}", server_key=egis.keys.server_key,
                  flush_interval=0.05)
    site = make_site()
    site.wsgi_app = CrawlerReporter(site.wsgi_app, down)
    try:
        with caplog.at_level(logging.WARNING, logger="egis_client"):
            assert answers(site) == answers(make_site())
            assert not down.flush(timeout=1)  # the reports wait for egis
    finally:
        down.shutdown(timeout=0)
    assert any("not delivered" in r.getMessage() for r in caplog.records)
    assert stored(egis.app)["crawl_hits"] == []


def test_a_client_without_a_server_key_is_refused_at_once(egis):
    with pytest.raises(ValueError, match="server key"):
        CrawlerReporter(make_site().wsgi_app, Client(host=egis.url, write_key="egis_x"))
