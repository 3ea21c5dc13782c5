"""The chart apps in real headless Chromium, hosted as a web host hosts them.

A host page built on the official AppBridge of @modelcontextprotocol/ext-apps (charts/test/host/,
bundled with the locked esbuild when the tests start) is served from http://localhost:<port>;
the spec's sandbox proxy is served from a second origin, http://127.0.0.1:<port>, under the CSP
the spec builds from the resource's `ui.csp` (egis declares no domain, so it is the spec's
restrictive default). The host reads each app from a live egis (gunicorn, `resources/read` by a
client that declared the extension), hands it real `query` and `funnel` results of that egis,
and answers the app's `tools/call` by calling that egis too.
"""
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser

from tests.fixtures.browser import PageServer, chromium
from tests.fixtures.charts import CHARTS, DOMAIN, Egis, events, spec_csp
from tests.fixtures.helpers import site_with_events


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


