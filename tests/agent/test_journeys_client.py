"""retention and paths through the official MCP Python SDK client against a real server (two
gunicorn workers), on tests/analytics/journeys.py's nine weeks (figures worked out there); the
client validates each structured result against the tool's outputSchema."""

import pytest

from models import database
from tests.fixtures.journeys import place, today, week_start
from tests.fixtures.mcp import sdk_calls

pytestmark = pytest.mark.slow


@pytest.fixture
def server(app, std_site, start_server):
    with app.app_context(), database.connection_context():
        place(std_site.site)
    live = start_server(workers=2)
    return f"{live.url}/api/mcp", std_site.server_key


def test_retention_and_paths_through_the_sdk_client(server):
    url, key = server
    nine_weeks = {"from": week_start(8), "to": today().isoformat()}
    answers = sdk_calls(url, key, {
        "retention": ("retention", {}),
        "paths": ("paths", {**nine_weeks, "start": {"page": "/pricing"}}),
        "bad": ("paths", {"start": {"page": "/"}, "end": {"goal": "Signup"}}),
    })
    retention = answers["retention"]
    assert retention.is_error is False, retention.content
    assert [row["visitors"] for row in retention.structured_content["cohorts"]] == [
        1, 1, 1, 0, 0, 1, 0, 0]
    assert retention.structured_content["average"]["retention_rate"][:3] == [100.0, 50.0, 50.0]
    assert f"{week_start(7)}: 1 visitors" in retention.content[0].text
    paths = answers["paths"]
    assert paths.is_error is False, paths.content
    assert paths.structured_content["visits"] == 4
    assert paths.structured_content["steps"][0]["values"][0] == {
        "value": "/signup", "visits": 2, "share": 50.0}
    bad = answers["bad"]
    assert bad.is_error is True
    assert "Give at most one of `start`" in bad.content[0].text
