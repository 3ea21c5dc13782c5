"""Each definition is written once (app.analytics.vocabulary) and stated from there: by
describe_data, by the tool descriptions and input schemas, and in docs/AGENTS.md's table."""
import re

from app.agent.read_tools import QUERY
from app.agent.tools import TOOLS
from app.analytics import overview, vocabulary
from app.analytics.vocabulary import DIMENSION_NAMES, FILTER_OPS, METRICS
from tests.fixtures import ROOT

AGENTS = ROOT / "docs" / "AGENTS.md"


def test_agents_md_states_the_vocabulary_s_definitions():
    text = AGENTS.read_text()
    found = re.search(r"<!-- definitions -->\n(.*?)\n<!-- /definitions -->", text, re.S)
    assert found, "docs/AGENTS.md has lost its definitions table"
    assert found.group(1) == vocabulary.definitions_table(), (
        "docs/AGENTS.md's definitions differ from app/analytics/vocabulary.py; paste:\n"
        + vocabulary.definitions_table())


def test_the_table_has_every_name_once():
    names = re.findall(r"^\| `([^`]+)` \|", vocabulary.definitions_table(), re.M)
    assert names == [*METRICS, *DIMENSION_NAMES, *FILTER_OPS]


def test_the_query_tool_lists_the_vocabulary():
    properties = QUERY.input_schema["properties"]
    assert properties["metrics"]["items"]["enum"] == list(METRICS)
    described = properties["dimensions"]["description"]
    assert all(name in described for name in DIMENSION_NAMES)
    assert all(name in properties["filters"]["description"] for name in FILTER_OPS)


def test_the_overview_names_query_s_metrics():
    [tool] = [tool for tool in TOOLS if tool.name == "get_overview"]
    assert all(name in tool.description for name in overview.METRICS)
    assert set(overview.METRICS) <= set(tool.output_schema["properties"])
    assert set(overview.METRICS) <= set(METRICS)


def test_rates_are_percentages():
    """Every rate is defined as a percent with 1 decimal."""
    for name in ("bounce_rate", "conversion_rate", "percentage"):
        assert METRICS[name].definition.startswith(("% of", "A row's visitors as %"))
        assert "(1 decimal)" in METRICS[name].definition
