"""The whole flow with the official MCP Python SDK's OAuth client (`OAuthClientProvider`)
against the live server, the consent page driven in headless Chromium, ending in a tools/call
through the SDK's client on the token it got:

- once with dynamic registration (RFC 7591),
- once with a client ID metadata document that the test serves over HTTPS (its own CA, which
  the server trusts through SSL_CERT_FILE; EGIS_OAUTH_PRIVATE_CLIENT_URLS=1, as on 127.0.0.1),
- and, without OAuth, the SDK's client with a read key in a static header: it works and is never
  challenged.

The SDK finds everything from the URL of /api/mcp alone: the 401 challenge, the protected-resource
metadata, the authorization-server metadata; it checks `iss` (RFC 9207) and the resource. The
browser follows the consent page's redirect to the client's own callback server, which is how
the test knows the 302 after the form's POST was not blocked (app/oauth/pages.py).
"""
import os
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from playwright.async_api import async_playwright

from models import OAuthClient, OAuthGrant
from models.oauth_client import DOCUMENT, REGISTERED
from tests.fixtures.browser import CHROMIUM, CHROMIUM_ARGS
from tests.fixtures.helpers import db
from tests.fixtures.oauth import Callback, DocumentServer, connect_code
from tests.fixtures.tracking import batch

pytestmark = pytest.mark.slow
DOMAIN = "std.example"


class MemoryStorage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def in_chromium(body: Callable[[Any], Awaitable[None]]) -> None:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM,
                                                   args=CHROMIUM_ARGS)
        try:
            await body(await browser.new_page())
        finally:
            await browser.close()


def provider(url: str, page: Any, callback: Callback, code: str,
             client_metadata_url: str | None = None) -> tuple[OAuthClientProvider, dict]:
    """The SDK's OAuth client; the browser types the connect code on the consent page."""
    seen: dict[str, Any] = {}

    async def redirect_handler(authorization_url: str) -> None:
        seen["authorization_url"] = authorization_url
        answer = await page.goto(authorization_url)
        seen["consent_headers"] = await answer.all_headers()
        seen["consent_text"] = await page.inner_text("main")
        await page.fill("input[name=connect_code]", code.lower())  # any case
        await page.click("button[value=allow]")
        await page.wait_for_url(f"{callback.url}?*")

    async def callback_handler() -> AuthorizationCodeResult:
        query = callback.wait()
        return AuthorizationCodeResult(code=query["code"], state=query["state"],
                                       iss=query.get("iss"))

    oauth = OAuthClientProvider(
        server_url=url, client_metadata=OAuthClientMetadata(
            redirect_uris=[callback.url], client_name="SDK test agent"),
        storage=MemoryStorage(), redirect_handler=redirect_handler,
        callback_handler=callback_handler, client_metadata_url=client_metadata_url)
    return oauth, seen


def connect_and_call(base: str, callback: Callback, code: str,
                     client_metadata_url: str | None = None) -> dict[str, Any]:
    """The SDK connects to /api/mcp knowing nothing but its URL; what it saw and called."""
    url = f"{base}/api/mcp"
    report: dict[str, Any] = {"statuses": []}

    async def main() -> None:
        async def body(page: Any) -> None:
            oauth, seen = provider(url, page, callback, code, client_metadata_url)
            report["seen"] = seen

            async def record(response: httpx2.Response) -> None:
                report["statuses"].append((response.request.url.path, response.status_code))

            async with httpx2.AsyncClient(auth=oauth, timeout=30,
                                          event_hooks={"response": [record]}) as http:
                async with Client(streamable_http_client(url, http_client=http)) as client:
                    result = await client.call_tool("get_overview", {})
                    report["overview"] = result.structured_content
                report["tokens"] = oauth.context.current_tokens

        await in_chromium(body)

    anyio.run(main)
    return report


def seed_pageviews(base: str, write_key: str, count: int) -> None:
    answer = httpx2.post(f"{base}/api/events", json=batch(count),
                         headers={"X-API-Key": write_key})
    assert answer.status_code == 200, answer.text


def check_flow(report: dict[str, Any], base: str, callback: Callback) -> None:
    paths = [path for path, _status in report["statuses"]]
    # Discovery from the challenge alone, then the token, then the retried call.
    assert report["statuses"][0] == ("/api/mcp", 401)
    assert "/.well-known/oauth-protected-resource/api/mcp" in paths
    assert "/.well-known/oauth-authorization-server" in paths
    assert ("/oauth/token", 200) in report["statuses"]
    assert report["overview"]["site"] == DOMAIN and report["overview"]["pageviews"] == 2
    headers = report["seen"]["consent_headers"]
    assert headers["x-frame-options"] == "DENY" and headers["cache-control"] == "no-store"
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    text = report["seen"]["consent_text"]
    assert "SDK test agent" in text and "127.0.0.1" in text
    assert "read this site's analytics; it cannot send or change data" in text
    back = callback.received[-1]
    assert set(back) == {"code", "state", "iss"} and back["iss"] == base
    tokens = report["tokens"]
    assert tokens.access_token.startswith("egisat_") and tokens.scope == "stats:read"


def test_the_sdk_connects_by_dynamic_registration(app, make_site, egis, callback):
    site = make_site(DOMAIN, "standard")
    seed_pageviews(egis.url, site.write_key, 2)
    report = connect_and_call(egis.url, callback, connect_code(app, DOMAIN))
    check_flow(report, egis.url, callback)
    assert ("/oauth/register", 201) in report["statuses"]
    with db(app):
        [grant] = OAuthGrant.select()
        assert (grant.client.kind, grant.client.client_name, grant.site.domain) == (
            REGISTERED, "SDK test agent", DOMAIN)


def test_the_sdk_connects_with_a_client_metadata_document(app, make_site, egis, callback,
                                                          document_server: DocumentServer):
    site = make_site(DOMAIN, "standard")
    seed_pageviews(egis.url, site.write_key, 2)
    client_id = document_server.serve_client("/sdk-client.json", [callback.url], "SDK test agent")
    report = connect_and_call(egis.url, callback, connect_code(app, DOMAIN), client_id)
    check_flow(report, egis.url, callback)
    paths = [path for path, _status in report["statuses"]]
    assert "/oauth/register" not in paths
    assert document_server.hits["/sdk-client.json"] == 1  # then cached (at most 24 hours)
    assert f"describes itself at {client_id}" in report["seen"]["consent_text"]
    with db(app):
        [grant] = OAuthGrant.select()
        assert (grant.client.kind, grant.client.client_id) == (DOCUMENT, client_id)
        assert OAuthClient.select().count() == 1


def test_the_sdk_with_a_read_key_header_is_never_challenged(app, make_site, egis):
    site = make_site(DOMAIN, "standard")
    seed_pageviews(egis.url, site.write_key, 2)
    created = app.test_cli_runner().invoke(args=["keys", "create", DOMAIN, "--kind", "read"])
    assert created.exit_code == 0, created.output
    read_key = created.output.splitlines()[-1]
    assert read_key.startswith("egisr_")
    statuses: list[int] = []
    challenges: list[str] = []

    async def record(response: httpx2.Response) -> None:
        statuses.append(response.status_code)
        if "www-authenticate" in response.headers:
            challenges.append(response.headers["www-authenticate"])

    async def main() -> None:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {read_key}"}, timeout=30,
                                  event_hooks={"response": [record]})
        async with http, Client(streamable_http_client(f"{egis.url}/api/mcp",
                                                       http_client=http)) as client:
            result = await client.call_tool("get_overview", {})
            assert result.structured_content["pageviews"] == 2

    anyio.run(main)
    assert statuses and all(status < 400 for status in statuses) and not challenges
    assert os.environ.get("EGIS_OAUTH_PRIVATE_CLIENT_URLS") is None  # only the server's
