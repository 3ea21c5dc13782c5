"""The tools `query` replaced (app.agent.retired): unlisted, and a call to one says which `query`
call answers it, with the caller's own period, limit and filters."""
import orjson
import pytest

from app.agent.protocol import ToolError
from app.agent.retired import RETIRED, RETIRED_TOOLS, query_call, sentence


def test_each_retired_tool_maps_to_a_query_call_with_the_callers_period():
    arguments = {"from": "2026-03-01", "to": "2026-03-31", "limit": 5}
    assert query_call("get_top_pages", arguments) == {
        "metrics": ["pageviews", "visitors"], "dimensions": ["event:page"],
        "filters": [["is", "event:type", ["pageview"]]], "limit": 5,
        "from": "2026-03-01", "to": "2026-03-31"}
    assert query_call("count_events", {"type": "click", "period": "7d"}) == {
        "metrics": ["events"], "dimensions": ["time:day"],
        "filters": [["is", "event:type", ["click"]]], "period": "7d"}
    assert query_call("get_goal_conversions", {"goal": "signup"})["filters"] == [
        ["is", "event:goal", ["signup"]]]


@pytest.mark.parametrize("limit", [0, 1001, True, "5", 2.5])
def test_a_limit_out_of_range_becomes_the_default(limit):
    assert query_call("get_top_sources", {"limit": limit})["limit"] == 10
    assert query_call("get_top_sources", {"limit": 1000})["limit"] == 1000


def test_arguments_that_are_no_object_give_the_bare_call():
    assert query_call("count_events", ["x"]) == {"metrics": ["events"],
                                                 "dimensions": ["time:day"]}


def test_a_call_is_a_tool_error_whose_sentence_holds_exact_json():
    assert [tool.name for tool in RETIRED_TOOLS] == list(RETIRED)
    assert not any(tool.listed for tool in RETIRED_TOOLS)
    with pytest.raises(ToolError) as error:
        RETIRED_TOOLS[0].handler(None, {"type": "goal"})
    text = str(error.value)
    assert text == sentence("count_events", {"type": "goal"})
    assert orjson.loads(text.split("instead: ", 1)[1]) == query_call("count_events",
                                                                     {"type": "goal"})
