"""docs/AGENTS.md's Python examples, run as written against a live egis (gunicorn, 2 workers):
each is taken from the page (tests.helpers.doc_example), its placeholders (the server's address,
the read key, the callback's port) swapped for the live ones, and run in a fresh interpreter of
the project's virtualenv, so that a change of the SDK or of egis that breaks them fails here.

- The read-key example: the key in the header of the `httpx2` client handed to the SDK's
  `streamable_http_client`, the chart extension declared, `tools/list` with
  `_meta.ui.resourceUri`, a `query` call, and the `ui://` app read.
- The OAuth example: the SDK's `OAuthClientProvider` finds egis from the URL alone; headless
  Chromium opens the consent page the script prints, types the code of `flask agents connect`
  and allows, egis sends it back to the script's loopback callback, and the script calls a tool
  on the token it got.
"""
import ast
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2
import pytest
from playwright.sync_api import sync_playwright

from tests.fixtures import ROOT
from tests.fixtures.browser import CHROMIUM, CHROMIUM_ARGS
from tests.fixtures.helpers import doc_example
from tests.fixtures.servers import free_port
from tests.fixtures.tracking import batch

pytestmark = pytest.mark.slow

AGENTS = ROOT / "docs" / "AGENTS.md"
DOMAIN = "shop.example"
PLACEHOLDER_URL = "https://analytics.example.com"
TOOLS = ["describe_data", "funnel", "get_crawler_activity", "get_errors", "get_ingest_health",
         "get_overview", "get_revenue", "get_web_vitals", "paths", "query", "retention"]


@pytest.fixture
def live(make_site, start_server):
    """A live egis with one site that holds one visit of three page views; (server, keys)."""
    keys = make_site(DOMAIN, "standard")
    server = start_server(workers=2)
    answer = httpx2.post(f"{server.url}/api/events", json=batch(3),
                         headers={"X-API-Key": keys.write_key})
    assert answer.status_code == 200, answer.text
    return server, keys


def script(tmp_path: Path, name: str, replace: dict[str, str]) -> list[str]:
    """The command that runs the example `name` with its placeholders replaced."""
    path = tmp_path / f"{name}.py"
    path.write_text(doc_example(AGENTS, name, replace))
    return [sys.executable, str(path)]


def test_the_read_key_example_lists_calls_and_reads_the_chart(live, tmp_path):
    server, keys = live
    url = server.url
    run = subprocess.run(script(tmp_path, "python-read-key", {
        PLACEHOLDER_URL: url, "egisr_...": keys.read_key}), capture_output=True, text=True,
        timeout=60)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert ast.literal_eval(lines[0]) == TOOLS
    assert lines[1] == "ui://egis/query"  # present only because the extension was declared
    assert lines[2].startswith(f"visitors, pageviews by visit:source for {DOMAIN}, ")
    assert "  1. (direct): visitors 1, pageviews 3" in lines
    assert ast.literal_eval(lines[-2]) == [1, 3]  # the totals
    kind, size, csp = lines[-1].split(" ", 2)
    assert kind == "text/html;profile=mcp-app" and int(size) > 5000
    assert ast.literal_eval(csp) == {"connectDomains": [], "resourceDomains": []}


def test_the_read_key_example_without_the_key_is_challenged(live, tmp_path):
    """The key is what lets the example in: with a wrong one egis answers 401 and the example
    fails (so the test above cannot pass without the header reaching egis)."""
    server, _ = live
    run = subprocess.run(script(tmp_path, "python-read-key", {
        PLACEHOLDER_URL: server.url, "egisr_...": "egisr_not-a-key"}), capture_output=True,
        text=True, timeout=60)
    assert run.returncode != 0
    assert "MCPError" in run.stderr
    assert '"route":"/api/mcp","endpoint":"mcp.mcp_endpoint","status":401' in server.log()


def consent_with_code(consent: str, code: str, callback: str) -> None:
    """The owner on the consent page: the connect code typed, Allow clicked, the script's
    loopback callback reached."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(consent)
        assert "My egis script" in page.inner_text("main")
        page.fill("input[name=connect_code]", code)
        page.click("button[value=allow]")
        page.wait_for_url(f"http://{callback}/callback?*")
        assert page.inner_text("body") == "Connected to egis: back to the terminal."
        browser.close()


def test_the_oauth_example_connects_with_a_connect_code(app, live, tmp_path):
    url = live[0].url
    callback = f"127.0.0.1:{free_port()}"
    command = script(tmp_path, "python-oauth", {PLACEHOLDER_URL: url, "127.0.0.1:8765": callback})
    connected = app.test_cli_runner().invoke(args=["agents", "connect", DOMAIN])
    assert connected.exit_code == 0, connected.output
    code = connected.output.splitlines()[-1]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        printed = [process.stdout.readline(), process.stdout.readline()]
        consent = printed[1].strip()
        assert consent.startswith(f"{url}/oauth/authorize?"), (printed, process.stderr.read())
        # In a thread of its own: the tracker tests' session-wide Chromium keeps Playwright's
        # event loop running in this one, where a second sync_playwright() is refused.
        with ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(consent_with_code, consent, code, callback).result(timeout=120)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 0, err
    assert f"Overview for {DOMAIN}, " in out
    assert "1 visitors, 1 visits, 3 page views" in out
    assert "code=" not in out + err  # the callback's log line is kept quiet
