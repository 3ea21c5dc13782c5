"""The chart apps in real headless Chromium, hosted as a web host hosts them.

A host page built on the official AppBridge of @modelcontextprotocol/ext-apps (charts/test/host/,
bundled with the locked esbuild when the tests start) is served from http://localhost:<port>;
the spec's sandbox proxy is served from a second origin, http://127.0.0.1:<port>, under the CSP
the spec builds from the resource's `ui.csp` (egis declares no domain, so it is the spec's
restrictive default). The host reads each app from a live egis (gunicorn, `resources/read` by a
client that declared the extension), hands it real `query` and `funnel` results of that egis,
and answers the app's `tools/call` by calling that egis too.
"""
import json
import subprocess
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Frame, Page

from app.agent.apps import EXTENSION, MIME_TYPE
from tests.analytics.test_query import ev
from tests.conftest import ROOT
from tests.helpers import site_with_events
from tests.sdk.conftest import PageServer, chromium

CHARTS = ROOT / "charts"
DOMAIN = "charts.example"
# The queried period: 14 days ending a week ago (so that the app's "last 30 days" holds it); the
# 14 days before it are the comparison period.
DAYS = 14
DAY = (datetime.now(UTC) - timedelta(days=DAYS + 6)).date()
SOURCES = ["Google", "(direct)", "Bing", "DuckDuckGo", "Hacker News", "Reddit", "GitHub",
           "Mastodon", "Newsletter", "Ecosia", "Qwant"]
ACCEPT = "application/json, text/event-stream"
DECLARING = {"protocolVersion": "2025-11-25", "clientInfo": {"name": "test-host", "version": "1"},
             "capabilities": {"extensions": {EXTENSION: {"mimeTypes": [MIME_TYPE]}}}}


def spec_csp(csp: dict[str, list[str]]) -> str:
    """The sandbox's Content-Security-Policy, as the MCP Apps spec builds it from `ui.csp`
    ("Security Implications": CSP construction from metadata)."""
    resources = " ".join(csp.get("resourceDomains", []))
    connect = " ".join(csp.get("connectDomains", []))
    return "; ".join(part.strip() for part in [
        "default-src 'none'", f"script-src 'self' 'unsafe-inline' {resources}",
        f"style-src 'self' 'unsafe-inline' {resources}", f"connect-src 'self' {connect}",
        f"img-src 'self' data: {resources}", f"font-src 'self' {resources}",
        f"media-src 'self' data: {resources}", "frame-src 'none'", "object-src 'none'",
        "base-uri 'self'"])


class Egis:
    """A live egis's /api/mcp, as a host that declared the chart apps talks to it."""

    def __init__(self, url: str, server_key: str) -> None:
        self.url = f"{url}/api/mcp"
        self.key = server_key
        self.session: str | None = None
        answer = self.rpc("initialize", DECLARING)
        assert answer["result"]["capabilities"]["resources"] == {"listChanged": False}
        assert self.session is not None

    def rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {self.key}", "Accept": ACCEPT,
                   "Content-Type": "application/json", "MCP-Protocol-Version": "2025-11-25"}
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        request = urllib.request.Request(self.url, body.encode(), headers, method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            self.session = response.headers.get("Mcp-Session-Id") or self.session
            return json.loads(response.read())

    def app(self, uri: str) -> dict[str, Any]:
        [contents] = self.rpc("resources/read", {"uri": uri})["result"]["contents"]
        assert contents["mimeType"] == MIME_TYPE
        return contents

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self.rpc("tools/call", {"name": tool, "arguments": arguments})["result"]


def events(site_id: int, _other_id: int) -> list[dict[str, Any]]:
    """Visits over 28 days: in the queried 14 (from DAY) 2 + i % 4 a day, in the 14 before
    1 + i % 3; each opens / from a source in turn, every second one goes on to /pricing, every
    third of those signs up."""
    rows, visit = [], 0
    for offset in range(-DAYS, DAYS):
        count = 2 + offset % 4 if offset >= 0 else 1 + offset % 3
        for n in range(count):
            visit += 1
            session, visitor = f"s{visit}", f"v{visit % 37}"
            at = datetime.combine(DAY + timedelta(days=offset), datetime.min.time()) \
                + timedelta(hours=9 + n)
            context = {"source": SOURCES[visit % len(SOURCES)], "channel": "Referral"}
            rows.append(ev(site_id, session, visitor, "pageview", at, "/", context=context))
            if visit % 2:
                rows.append(ev(site_id, session, visitor, "pageview",
                               at + timedelta(minutes=1), "/pricing", context=context))
                if visit % 3 == 0:
                    rows.append(ev(site_id, session, visitor, "goal",
                                   at + timedelta(minutes=2), "/pricing", name="Signup"))
    return rows


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Chromium for this module only: Playwright's event loop is gone before the tests that
    run their own (anyio) start."""
    yield from chromium()


@pytest.fixture
def egis(app, make_site, start_server) -> Egis:
    keys = site_with_events(app, make_site, DOMAIN, events, timezone="UTC")
    return Egis(start_server(workers=2).url, keys.server_key)


@pytest.fixture(scope="session")
def host_page(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The test host, bundled from charts/test/host/host.js with the locked esbuild."""
    if not (CHARTS / "node_modules" / "@modelcontextprotocol" / "ext-apps").is_dir():
        pytest.fail("charts/node_modules is missing: run `npm ci` in charts/ (.ci/run does)")
    out = tmp_path_factory.mktemp("host") / "host.html"
    subprocess.run(["node", "test/host/build-host.mjs", str(out)], cwd=CHARTS, check=True)
    return out.read_text()


@pytest.fixture
def hosting(host_page: str, egis: Egis) -> Iterator[Callable[[str, dict[str, Any]], str]]:
    """Serve the host page and a sandbox proxy for the app `uri` (read from egis, its CSP
    from the resource's `ui.csp`); returns (host URL, sandbox URL, the app's HTML and csp)."""
    host, sandbox = PageServer(), PageServer()
    host.pages["/host.html"] = host_page
    sandbox.pages["/sandbox.html"] = (CHARTS / "test" / "host" / "sandbox.html").read_text()

    def serve(uri: str) -> dict[str, Any]:
        contents = egis.app(uri)
        csp = contents["_meta"]["ui"]["csp"]
        sandbox.headers["/sandbox.html"] = {"Content-Security-Policy": spec_csp(csp)}
        host_origin = host.url("").rstrip("/")
        return {"host": host.url("/host.html"),
                "sandbox": sandbox.url(f"/sandbox.html?host={host_origin}", "127.0.0.1"),
                "html": contents["text"], "csp": csp}

    yield serve
    host.stop()
    sandbox.stop()


def app_frame(page: Page) -> Frame:
    """The app's frame: inside the sandbox proxy's, inside the host page."""
    return next(frame for frame in page.frames
                if frame.parent_frame and frame.parent_frame.parent_frame)


def table_of(app: Frame) -> list[list[str]]:
    """The chart's accessible table: a list of each row's cells' text."""
    return app.evaluate("""() => [...document.querySelectorAll('table tr')].map(
        (row) => [...row.children].map((cell) => cell.textContent))""")


def screenshot_dir(tmp_path: Path) -> Path:
    path = tmp_path / "screenshots"
    path.mkdir(exist_ok=True)
    return path


