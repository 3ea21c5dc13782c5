"""A refused origin in a real browser: the page reads egis's 403 and its reason, not a bare
"blocked by CORS policy", and nothing is stored.

The site's domain is `localhost`; the page posts from http://localhost:<port> (allowed) or
http://127.0.0.1:<port> (refused: hosts are compared) to egis on another port, so Chromium
sends a real preflight first (the request carries X-API-Key and a JSON body).
"""
import pytest

from tests.fixtures.database import BACKEND
from tests.fixtures.tracking import batch, goal, stored_events, tallies

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    BACKEND == "sqlite", reason="browser tests run on PostgreSQL")]

# fetch's view of the answer: its status and the text the page can read, or the TypeError a
# response without CORS headers gives ("Failed to fetch")
POST_FROM_THE_PAGE = """async ([url, key, body]) => {
  try {
    const response = await fetch(url, {method: "POST", body: JSON.stringify(body),
      headers: {"X-API-Key": key, "Content-Type": "application/json"}});
    return {status: response.status, text: await response.text()};
  } catch (error) {
    return {status: null, text: String(error)};
  }
}"""


@pytest.fixture
def std(make_site):
    return make_site("localhost", "standard")


@pytest.mark.parametrize("path, body", [("/api/events", batch), ("/api/goals", goal)])
def test_the_page_reads_the_refusal_and_nothing_is_stored(app, std, pages, page, egis,
                                                          path, body):
    pages.pages["/"] = "<!doctype html><title>shop</title>"

    page.goto(pages.url("/", "localhost"))
    allowed = page.evaluate(POST_FROM_THE_PAGE, [egis.url + path, std.write_key, body()])
    assert allowed["status"] == 200, allowed
    assert len(stored_events(app, std.site.id)) == 1

    page.goto(pages.url("/", "127.0.0.1"))
    refused = page.evaluate(POST_FROM_THE_PAGE, [egis.url + path, std.write_key, body()])
    assert refused["status"] == 403, refused
    assert (f"Origin 'http://127.0.0.1:{pages.port}' is not allowed: requests must come from "
            "localhost or one of its subdomains.") in refused["text"]
    assert len(stored_events(app, std.site.id)) == 1  # the allowed one only
    assert tallies(app, std.site.id).get("rejected_403_origin") == 1
