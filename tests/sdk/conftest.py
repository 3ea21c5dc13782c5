"""The tracker end to end: real headless Chromium, a real server + database, two origins.

The test page is served from http://localhost:<port> (or a subdomain: Chromium resolves
*.localhost to the loopback), the tracker and the API from http://127.0.0.1:<port> through a
proxy (tests/fixtures/proxy.py) that can fail on purpose. So the page's requests are cross-origin,
with real CORS preflights, and the site's domain is `localhost`.

Chromium is Debian's (`/usr/bin/chromium`, or EGIS_CHROMIUM), driven by Playwright's Python
package; `.ci/run` installs it. The browser sends an ordinary desktop Chrome user agent: the
default one says HeadlessChrome, which egis rightly files as a bot. It is set on the command line,
not only per context: keepalive requests that outlive their page go out with the browser's own.
"""
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page

from tests.fixtures.browser import FLUSH_INTERVAL_MS, PageServer, chromium
from tests.fixtures.helpers import call_tool as mcp_call
from tests.fixtures.proxy import FlakyProxy
from tests.fixtures.servers import IN_REQUEST, LiveServer, launch_server, stop_server
from tests.fixtures.tracking import CHROME_UA


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    yield from chromium()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    context = browser.new_context(user_agent=CHROME_UA)
    yield context
    context.close()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    page = context.new_page()
    page.warnings = []  # console warnings, for the tests that expect one
    page.on("console", lambda message: message.type == "warning"
            and page.warnings.append(message.text))
    return page


@pytest.fixture
def pages() -> Iterator[PageServer]:
    server = PageServer()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def live_egis(migrated: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One server (2 workers) per test module. Each test has its own site and keys (the
    tables are emptied after every test) and its own proxy, so nothing crosses from one test to
    the next: a keepalive request still under way targets a proxy that is gone, and the tally
    of what was not stored is written in the request, not a second later (app.runtime.tally), as is
    the rollups' merge (IN_REQUEST)."""
    server = launch_server(migrated, tmp_path_factory.mktemp("egis"), workers=2,
                           env=IN_REQUEST)
    yield server
    stop_server(server)


@pytest.fixture
def egis(live_egis: LiveServer, live_day_salts: None) -> Iterator[FlakyProxy]:
    """The live egis behind a failing proxy of this test's own; tests talk to the proxy."""
    proxy = FlakyProxy(live_egis.url).start()
    yield proxy
    proxy.stop()


@pytest.fixture
def tracked(pages: PageServer, egis: FlakyProxy) -> Callable[..., str]:
    """Publish a page that carries the tracker's tag; returns its URL.

    `key` is the write key; `attributes` become data- attributes of the tag (`flush_interval`
    -> data-flush-interval). `head` goes before the tag (the pre-load stub), `body` after it.
    """

    def publish(path: str, key: str, body: str = "", head: str = "", host: str = "localhost",
                title: str = "Test page", **attributes: Any) -> str:
        attributes.setdefault("flush_interval", FLUSH_INTERVAL_MS)
        data = "".join(f' data-{name.replace("_", "-")}="{value}"'
                       for name, value in attributes.items())
        pages.pages[path] = (
            f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>{head}"
            f"<script defer src='{egis.url}/tracker.js' data-key='{key}'{data}></script>"
            f"</head><body>{body}</body></html>")
        return pages.url(path, host)

    return publish


@pytest.fixture
def call_tool(app) -> Callable[..., dict[str, Any]]:
    """An analytics tool's result for a site (its SiteKeys), through /api/mcp."""
    client = app.test_client()
    return lambda keys, tool, **arguments: mcp_call(client, keys.server_key, tool, **arguments)
