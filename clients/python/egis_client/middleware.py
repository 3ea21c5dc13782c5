"""`CrawlerReporter`: WSGI middleware that reports bot-like document fetches to egis.

It sees every request at the site's edge and passes it through unchanged: the same environ,
status, headers and body, and the response is never delayed, since a report is only queued on
the client (egis_client.sender sends it from its own thread, and keeps answering nothing to the
visitor when egis is down). Reported: GET and HEAD requests for a document (Sec-Fetch-Dest
`document` or absent, and an HTML answer) that are not ordinary browser navigations, that is
`Sec-Fetch-Mode` other than `navigate`, or a User-Agent without `Mozilla/`, or one naming a bot.
egis names the crawler from its User-Agent and its network from the address.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from egis_client.client import Client

log = logging.getLogger("egis_client")

# Words a crawler's, fetcher's or tool's User-Agent carries and a person's browser does not.
BOT_WORDS = re.compile(r"bot|crawl|spider|slurp|scrap|fetch|headless|preview|archiver|"
                       r"lighthouse|monitor|check|python|curl|wget|httpclient|okhttp|java/|"
                       r"go-http|libwww|axios|node-fetch", re.IGNORECASE)

MAX_FETCH_METADATA = 32  # egis's limit for a Sec-Fetch-* value
StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def is_browser_navigation(mode: str, user_agent: str) -> bool:
    return (mode == "navigate" and "Mozilla/" in user_agent
            and not BOT_WORDS.search(user_agent))


def _wsgi_text(value: str) -> str:
    """A WSGI environ string (bytes as latin-1) as the UTF-8 text it carries."""
    return value.encode("latin-1", "replace").decode("utf-8", "replace")


class CrawlerReporter:
    """`app.wsgi_app = CrawlerReporter(app.wsgi_app, client)`; the client needs a server key."""

    def __init__(self, app: WSGIApp, client: Client) -> None:
        client._key("server", "CrawlerReporter")  # fail now, not on the first crawler
        self.app = app
        self.client = client

    def __call__(self, environ: dict[str, Any], start_response: StartResponse
                 ) -> Iterable[bytes]:
        if not self._may_report(environ):
            return self.app(environ, start_response)

        def reporting_start_response(status: str, headers: list[tuple[str, str]],
                                     *args: Any) -> Any:
            if _is_html(headers):
                self._report(environ)
            return start_response(status, headers, *args)

        return self.app(environ, reporting_start_response)

    @staticmethod
    def _may_report(environ: dict[str, Any]) -> bool:
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            return False
        if environ.get("HTTP_SEC_FETCH_DEST", "document").lower() not in ("document", ""):
            return False  # an image, a script, a fetch() from a page: not a document
        mode = environ.get("HTTP_SEC_FETCH_MODE", "").lower()
        return not is_browser_navigation(mode, environ.get("HTTP_USER_AGENT", ""))

    def _report(self, environ: dict[str, Any]) -> None:
        try:
            self.client.crawl(
                path=_wsgi_text(environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", ""))
                or "/",
                host=environ.get("HTTP_HOST") or None,
                user_agent=_wsgi_text(environ.get("HTTP_USER_AGENT", "")),
                ip=environ.get("REMOTE_ADDR") or None,
                sec_fetch_dest=environ.get("HTTP_SEC_FETCH_DEST", "")[:MAX_FETCH_METADATA],
                sec_fetch_mode=environ.get("HTTP_SEC_FETCH_MODE", "")[:MAX_FETCH_METADATA],
            )
        except Exception:  # the site answers whatever becomes of the report
            log.exception("egis client: could not queue a crawl report")


def _is_html(headers: list[tuple[str, str]]) -> bool:
    return any(name.lower() == "content-type" and value.lower().startswith("text/html")
               for name, value in headers)


__all__ = ["CrawlerReporter", "is_browser_navigation"]
