"""The consent page in headless Chromium (Debian's, through Playwright's Python package), on the
live server: usable without JavaScript and on a 360 px phone, nothing fetched from elsewhere,
impossible to frame, a wrong or used code said on the page, Allow and Deny sending the browser
back to the client's redirect URI (a server of the test's own on another origin).

The redirect after the form's POST is the trap app/oauth/pages.py describes: with
`form-action 'self'` in its CSP, Chromium blocks it. The last test shows that trap in this very
Chromium on a page of the test's own, and the ones before it show egis's page getting through.
"""
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Browser, sync_playwright

from tests.fixtures.browser import CHROMIUM, CHROMIUM_ARGS, PageServer
from tests.fixtures.oauth import Agent, Callback, connect_code

pytestmark = pytest.mark.slow
PHONE = {"viewport": {"width": 360, "height": 740}, "device_scale_factor": 2, "is_mobile": True,
         "has_touch": True}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def consent(app, make_site, agent, callback: Callback) -> tuple[Agent, str]:
    """A registered client whose redirect URI is the callback server; the consent page's URL."""
    make_site("std.example", "standard")
    me = agent(callback.url).register("Browser test agent")
    return me, f"{me.base}/oauth/authorize?{urlencode(me.authorization())}"


def test_on_a_phone_without_javascript(app, browser, consent, callback):
    me, url = consent
    looks = browser.new_context(**PHONE)
    try:  # the layout, measured with script (the page itself has none)
        page = looks.new_page()
        page.goto(url)
        assert page.evaluate("document.documentElement.scrollWidth") <= 360
        assert page.evaluate("parseFloat(getComputedStyle(document.body).fontSize)") >= 16
        assert page.locator('meta[name="viewport"]').get_attribute("content") == (
            "width=device-width, initial-scale=1")
        for control in ("input[name=connect_code]", "button[value=allow]",
                        "button[value=deny]"):
            box = page.locator(control).bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= 360 and box["height"] >= 40
        assert page.evaluate("document.scripts.length") == 0
    finally:
        looks.close()

    context = browser.new_context(**PHONE, java_script_enabled=False)
    requested: list[str] = []
    try:
        page = context.new_page()
        page.on("request", lambda request: requested.append(request.url))
        page.goto(url)
        page.fill("input[name=connect_code]", connect_code(app, "std.example"))
        page.click("button[value=allow]")
        page.wait_for_url(f"{callback.url}?*")
    finally:
        context.close()
    back = callback.wait()
    assert set(back) == {"code", "state", "iss"}
    assert me.exchange(back["code"]).status_code == 200
    # Nothing but the page, its form's POST and the way back (and Chromium's own favicon).
    assert [asked for asked in requested if not asked.endswith("/favicon.ico")] == [
        url, f"{me.base}/oauth/authorize", callback.url + "?" + requested[-1].split("?", 1)[1]]


def test_a_wrong_then_a_used_code_are_said_on_the_page(app, browser, consent, callback):
    me, url = consent
    page = browser.new_page()
    try:
        page.goto(url)
        page.fill("input[name=connect_code]", "AAAA-AAAA-AAAA-AAAA")
        page.click("button[value=allow]")
        assert "That connect code is wrong" in page.inner_text("[role=alert]")
        code = connect_code(app, "std.example")
        page.fill("input[name=connect_code]", code)
        page.click("button[value=allow]")
        page.wait_for_url(f"{callback.url}?*")
        page.goto(me.base + "/oauth/authorize?" + url.split("?", 1)[1])
        page.fill("input[name=connect_code]", code)
        page.click("button[value=allow]")
        assert "That connect code was used already" in page.inner_text("[role=alert]")
    finally:
        page.close()


def test_deny_goes_back_with_access_denied(app, browser, consent, callback):
    _me, url = consent
    page = browser.new_page()
    try:
        page.goto(url)
        page.click("button[value=deny]")  # no code needed to say no
        page.wait_for_url(f"{callback.url}?*")
    finally:
        page.close()
    back = callback.wait()
    assert back["error"] == "access_denied" and set(back) == {
        "error", "error_description", "state", "iss"}


def test_the_page_cannot_be_framed(browser, consent):
    _me, url = consent
    pages = PageServer()
    pages.pages["/frame"] = f'<!doctype html><iframe src="{url}" width=400 height=600></iframe>'
    page = browser.new_page()
    refused: list[str] = []
    page.on("console", lambda message: refused.append(message.text))
    try:
        page.goto(url)  # on its own, the page is there
        assert page.locator("input[name=connect_code]").count() == 1
        page.goto(pages.url("/frame"))
        page.wait_for_load_state("load")
        [frame] = [frame for frame in page.frames if frame != page.main_frame]
        assert frame.url.startswith("chrome-error://") or frame.locator(
            "input[name=connect_code]").count() == 0
        assert any("frame-ancestors" in text or "X-Frame-Options" in text for text in refused)
    finally:
        page.close()
        pages.stop()


class FormServer:
    """A page whose form POSTs to its own origin, which answers with a redirect to `target`;
    `policy` is the page's Content-Security-Policy."""

    def __init__(self, target: str, policy: str | None) -> None:
        page = (b'<!doctype html><form method="post" action="/go">'
                b'<button type="submit">Go</button></form>')

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                if policy:
                    self.send_header("Content-Security-Policy", policy)
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(302)
                self.send_header("Location", target + "?code=x&state=y")
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("policy", [None, "form-action 'self'"])
def test_the_trap_form_action_self_blocks_the_redirect_back(browser, callback, policy):
    form = FormServer(callback.url, policy)
    page = browser.new_page()
    try:
        page.goto(form.url)
        if policy is None:
            page.click("button")
            page.wait_for_url(f"{callback.url}?*")
        else:
            with page.expect_console_message(lambda message: "form-action" in message.text):
                page.click("button")
    finally:
        page.close()
        form.stop()
    assert bool(callback.received) is (policy is None)
