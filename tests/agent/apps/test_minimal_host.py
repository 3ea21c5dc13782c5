"""docs/AGENTS.md's minimal host, as written, hosting the chart apps in real headless Chromium.

The doc's `showChart` (tests.helpers.doc_example) runs in a host page on http://localhost:<port>;
the sandbox proxy (charts/test/host/sandbox.html) is served from http://127.0.0.1:<port> under
the doc's Content-Security-Policy; `mcp` is a live egis's /api/mcp, through a client that
declared the extension (tests/agent/apps/conftest.py). Not the official AppBridge
(test_charts_browser.py hosts with it): only the messages the doc names answer the app, so a
message the apps need and the doc leaves out fails here.
"""
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from playwright.sync_api import Browser, Frame, Page

from tests.fixtures import ROOT
from tests.fixtures.browser import PageServer
from tests.fixtures.charts import CHARTS, DAY, DAYS, Egis, app_frame, table_of
from tests.fixtures.helpers import doc_example, wait_for

pytestmark = pytest.mark.slow

AGENTS = ROOT / "docs" / "AGENTS.md"
FROM, TO = DAY.isoformat(), (DAY + timedelta(days=DAYS - 1)).isoformat()
DARK = {"theme": "dark", "locale": "en-US"}


@dataclass
class Host:
    """The doc's host in a page of its own: the errors of its frames, the MCP requests it made."""

    page: Page
    errors: list[str]
    calls: list[tuple[str, Any]]

    @property
    def app(self) -> Frame:
        return app_frame(self.page)


@pytest.fixture
def host(browser: Browser, egis: Egis) -> Iterator[Any]:
    pages, sandbox = PageServer(), PageServer()
    pages.pages["/host.html"] = ("<!doctype html><html><head><meta charset=\"utf-8\">"
                                 "<title>minimal host</title><link rel=\"icon\" href=\"data:,\">"
                                 "</head><body><div id=\"box\"></div><script>"
                                 + doc_example(AGENTS, "minimal-host") + "</script></body></html>")
    sandbox.pages["/sandbox.html"] = (CHARTS / "test" / "host" / "sandbox.html").read_text()
    sandbox.headers["/sandbox.html"] = {
        "Content-Security-Policy": doc_example(AGENTS, "host-csp").strip()}
    context = browser.new_context(viewport={"width": 800, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    page.on("pageerror", lambda error: errors.append(str(error)))
    calls: list[tuple[str, Any]] = []

    def mcp(method: str, params: dict[str, Any]) -> dict[str, Any]:
        calls.append((method, params))
        answer = egis.rpc(method, params)
        assert "result" in answer, answer
        return answer["result"]

    page.expose_function("egisMcp", mcp)

    def show(tool: str, arguments: dict[str, Any], host_context: dict[str, Any]) -> Host:
        page.goto(pages.url("/host.html"))
        proxy = sandbox.url(f"/sandbox.html?host={pages.url('').rstrip('/')}", "127.0.0.1")
        page.evaluate("""async ({ proxy, tool, args, hostContext }) => {
            window.shown = await showChart({ box: document.getElementById('box'),
                sandboxUrl: proxy, mcp: (method, params) => window.egisMcp(method, params),
                tool, args, hostContext });
        }""", {"proxy": proxy, "tool": tool, "args": arguments, "hostContext": host_context})
        page.frame_locator("#box iframe").frame_locator("iframe").locator(
            "main header").wait_for()
        return Host(page, errors, calls)

    yield show
    context.close()
    pages.stop()
    sandbox.stop()


def no_errors(hosted: Host) -> None:
    """No error in any frame, a CSP violation included (Chromium logs those as errors)."""
    hosted.app.evaluate("() => new Promise(requestAnimationFrame)")
    assert hosted.errors == []


def test_the_query_chart_draws_in_the_host_s_theme_and_size(host):
    arguments = {"metrics": ["visitors"], "dimensions": ["time:day"], "from": FROM, "to": TO}
    hosted = host("query", arguments, DARK)
    assert [method for method, _ in hosted.calls] == ["tools/list", "resources/read",
                                                      "tools/call"]
    result = hosted.calls[-1]
    assert result == ("tools/call", {"name": "query", "arguments": arguments})
    header, *rows = table_of(hosted.app)
    assert header == ["Day", "Visitors"] and len(rows) == DAYS
    assert f"Line chart: Visitors per day, {FROM} to {TO}" in hosted.app.locator(
        "main").aria_snapshot()
    assert hosted.app.evaluate("() => document.documentElement.dataset.theme") == "dark"
    # size-changed: the frame is as tall as the app's document (an iframe is 150 px otherwise)
    height = hosted.app.evaluate(
        "() => Math.ceil(document.documentElement.getBoundingClientRect().height)")
    assert height > 150
    wait_for(lambda: hosted.page.evaluate(
        "() => window.shown.frame.clientHeight") == height,
        what="the frame sized to the app", seen=lambda: hosted.page.evaluate(
            "() => window.shown.frame.style.height"))
    no_errors(hosted)


def test_the_period_switch_calls_egis_through_the_host(host):
    hosted = host("query", {"metrics": ["visitors", "pageviews"], "dimensions": ["time:day"],
                            "from": FROM, "to": TO}, DARK)
    hosted.app.get_by_role("button", name="90 days").click()
    wait_for(lambda: hosted.app.get_by_role("button", name="90 days").get_attribute(
        "aria-pressed") == "true", what="the switch pressed")  # once the answer is drawn
    assert hosted.calls[3:] == [("tools/call", {"name": "query", "arguments": {
        "metrics": ["visitors", "pageviews"], "dimensions": ["time:day"], "period": "90d"}})]
    header, *rows = table_of(hosted.app)
    assert header == ["Day", "Visitors"] and len(rows) == 90  # every day of the new period
    no_errors(hosted)


def test_the_theme_changes_on_host_context_changed(host):
    hosted = host("query", {"metrics": ["visits"], "dimensions": ["visit:source"],
                            "from": FROM, "to": TO}, DARK)
    assert hosted.app.evaluate("() => document.documentElement.dataset.theme") == "dark"
    hosted.page.evaluate("""() => window.shown.send({
        method: 'ui/notifications/host-context-changed', params: { theme: 'light' } })""")
    wait_for(lambda: hosted.app.evaluate("() => document.documentElement.dataset.theme")
             == "light", what="the light theme")
    assert table_of(hosted.app)[0] == ["Source", "Visits"]
    no_errors(hosted)


def test_the_funnel_chart_draws(host):
    hosted = host("funnel", {"steps": [{"page": "/"}, {"page": "/pricing"}, {"goal": "Signup"}],
                             "from": FROM, "to": TO}, {"theme": "light", "locale": "en-US"})
    steps = hosted.calls[-1]
    assert steps[0] == "tools/call" and steps[1]["name"] == "funnel"
    header, *rows = table_of(hosted.app)
    assert header[0] == "Step" and [row[0] for row in rows] == [
        "1. Visit /", "2. Visit /pricing", "3. Goal Signup"]
    no_errors(hosted)


def test_the_doc_s_policy_holds_in_the_app_s_frame(host, egis):
    """The app draws under the doc's policy (the tests above) and the policy reaches its frame:
    a fetch from it, to egis itself, is refused."""
    hosted = host("query", {"metrics": ["visitors"], "from": FROM, "to": TO}, DARK)
    no_errors(hosted)
    refused = hosted.app.evaluate("""(url) => fetch(url).then(() => 'fetched',
        (error) => error.name)""", egis.url)
    assert refused == "TypeError"
    assert any("violates the following Content Security Policy directive: \"connect-src "
               "'none'\"" in error for error in hosted.errors), hosted.errors
