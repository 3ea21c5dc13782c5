"""describe_data, query and funnel through the official MCP Python SDK client against a real
server, on tests/analytics/test_query.py's hand-built site (figures worked out there)."""

import pytest

from tests.fixtures.helpers import site_with_events
from tests.fixtures.mcp import sdk_calls
from tests.fixtures.query import PERIOD, dataset

pytestmark = pytest.mark.slow


@pytest.fixture
def server(app, make_site, start_server):
    keys = site_with_events(app, make_site, "q.example", dataset)
    live = start_server(workers=1)
    return f"{live.url}/api/mcp", keys.server_key


def test_the_read_tools_through_the_sdk_client(server):
    url, key = server
    answers = sdk_calls(url, key, {
        name: ("query" if name == "bad" else name, {**PERIOD, **arguments})
        for name, arguments in (
            ("query", {"metrics": ["visitors", "visits"], "dimensions": ["visit:country"],
                       "filters": [["is_not", "visit:device", ["Tablet"]]]}),
            ("funnel", {"steps": [{"page": "/"}, {"page": "/pricing"}, {"goal": "Signup"}]}),
            ("describe_data", {"dimension": "visit:source"}),
            ("bad", {"metrics": ["visit"]}))
    })
    query = answers["query"]
    assert query.is_error is False, query.content
    # S4 (Tablet, no country) left out: DE S1, S2, S5 (visitors A, D); FR S3 (B, w2)
    assert [(row["dimensions"], row["metrics"]) for row in
            query.structured_content["results"]] == [(["DE"], [2, 3]), (["FR"], [2, 2])]
    assert query.structured_content["timezone"] == "Europe/Berlin"
    assert "q.example, 2026-03-28 to 2026-03-29" in query.content[0].text
    funnel = answers["funnel"]
    assert funnel.is_error is False, funnel.content
    # visits with a / page view: S1, S5; then /pricing after it: both; then Signup: S1
    assert [step["count"] for step in funnel.structured_content["steps"]] == [2, 2, 1]
    described = answers["describe_data"]
    assert described.is_error is False, described.content
    assert "visits" in described.structured_content["metrics"]
    bad = answers["bad"]
    assert bad.is_error is True
    assert bad.content[0].text.startswith("Unknown metric 'visit'. Did you mean 'visits'?")
