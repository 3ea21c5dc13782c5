"""The gate of every tracking endpoint (app.tracking.gate): key, then Origin, then rate limits,
then the bot filter, which only browser requests (with an Origin) pass through."""
import pytest
from flask import g

from app.tracking.gate import is_bot_request
from tests.fixtures.tracking import (
    CHROME_UA,
    GOOGLEBOT_UA,
    HEADLESS_UA,
    batch,
    goal,
    post_json,
    stored_counts,
    tallies,
)

ORIGIN = "https://std.example"


@pytest.mark.parametrize(("user_agent", "browser", "bot"), [
    (GOOGLEBOT_UA, True, True), (HEADLESS_UA, True, True), (CHROME_UA, True, False),
    ("", True, True), (GOOGLEBOT_UA, False, False), ("python-requests/2.32", False, False)])
def test_only_a_browser_request_is_bot_filtered(app, user_agent, browser, bot):
    with app.test_request_context(headers={"User-Agent": user_agent}):
        g.browser = browser
        assert is_bot_request() is bot


@pytest.mark.parametrize("path", ["/api/events", "/api/goals"])
def test_a_bot_from_the_sites_origin_is_answered_and_only_tallied(client, app, std_site, path):
    body = batch() if path == "/api/events" else goal()
    person = post_json(client, path, body, std_site.write_headers(
        Origin=ORIGIN, **{"User-Agent": CHROME_UA}))
    assert person.status_code == 200 and "bot" not in person.get_json()
    before = stored_counts(app)
    again = batch() if path == "/api/events" else goal()
    answer = post_json(client, path, again, std_site.write_headers(
        Origin=ORIGIN, **{"User-Agent": GOOGLEBOT_UA}))
    assert answer.status_code == 200 and answer.get_json()["bot"] is True
    assert stored_counts(app) == before
    assert tallies(app, std_site.site.id).get("bot") == 1


def test_the_key_and_the_origin_are_checked_before_the_bot_filter(client, app, std_site):
    bot = {"User-Agent": GOOGLEBOT_UA}
    wrong_key = post_json(client, "/api/events", batch(),
                          {"X-API-Key": "egis_" + "x" * 43, "Origin": ORIGIN, **bot})
    assert wrong_key.status_code == 401
    wrong_origin = post_json(client, "/api/events", batch(),
                             std_site.write_headers(Origin="https://evil.example", **bot))
    assert wrong_origin.status_code == 403
    assert tallies(app, std_site.site.id).get("bot") is None


def test_a_backend_with_a_bot_like_user_agent_is_stored(client, app, std_site):
    answer = post_json(client, "/api/events", batch(2),
                       std_site.write_headers(**{"User-Agent": "python-requests/2.32"}))
    assert answer.status_code == 200 and answer.get_json().get("bot") is None
    assert stored_counts(app)["events"] == 2
