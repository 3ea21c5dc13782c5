"""The days a tool answers (app.analytics.period): 0002-01-01 to 9998-12-31, also after `compare`
moves the period; every date past them is a tool error naming the argument and the range, in
each of the nine tools, in the zones farthest from UTC either way."""
from typing import Any

import pytest

from models import Site
from tests.fixtures.helpers import db, tool_result

# Each tool with the arguments it needs besides the period.
TOOLS: dict[str, dict[str, Any]] = {
    "describe_data": {}, "query": {"metrics": ["visitors", "pageviews"]},
    "funnel": {"steps": [{"page": "/"}, {"page": "/pricing"}]}, "get_overview": {},
    "get_revenue": {}, "get_web_vitals": {}, "get_errors": {}, "get_crawler_activity": {},
    "get_ingest_health": {},
}
RANGE = "dates run from 0002-01-01 to 9998-12-31."
# UTC+14 and UTC-12: a local day's bounds a day either side of its UTC date
ZONES = ("Etc/GMT-14", "Etc/GMT+12")


@pytest.fixture(params=ZONES)
def call(request, app, std_site):
    with db(app):
        Site.update(timezone=request.param).where(Site.id == std_site.site.id).execute()
    client = app.test_client()
    return lambda name, **arguments: tool_result(client, std_site.server_headers(), name,
                                                 {**TOOLS[name], **arguments})


def refusal(result: dict[str, Any]) -> str:
    assert result["isError"] is True and "structuredContent" not in result, result
    [content] = result["content"]
    return content["text"]


@pytest.mark.parametrize("name", TOOLS)
def test_every_tool_answers_the_first_and_last_days_and_refuses_beyond(call, name):
    for first, last in (("0002-01-01", "0002-01-05"), ("9998-12-27", "9998-12-31")):
        answered = call(name, **{"from": first, "to": last})
        assert answered["isError"] is False, answered["content"]
        assert (answered["structuredContent"]["from"],
                answered["structuredContent"]["to"]) == (first, last)
    prefix = "" if name in ("describe_data", "query", "funnel") else \
        f"Invalid arguments for {name}: "
    for argument, first, last, named in (("from", "0001-01-01", "0002-01-05", "0001-01-01"),
                                         ("to", "9998-12-27", "9999-12-31", "9999-12-31")):
        assert refusal(call(name, **{"from": first, "to": last})) == \
            f"{prefix}`{argument}` is {named}: {RANGE}"
    assert refusal(call(name, to="9999-12-31")) == f"{prefix}`to` is 9999-12-31: {RANGE}"


def test_compare_stays_within_the_days_too(call):
    """0002-01-05 a year back is 0001-01-05; its previous day, 0002-01-04, is answered."""
    day = {"from": "0002-01-05", "to": "0002-01-05"}
    for compare, begins in (("previous_period", "0002-01-04"), ("year_over_year", "0002-01-05")):
        answered = call("query", **({**day, "from": "0003-01-05", "to": "0003-01-05"}
                                    if compare == "year_over_year" else day), compare=compare)
        assert answered["isError"] is False, answered["content"]
        assert answered["structuredContent"]["comparison"]["from"] == begins
    explicit = call("query", **day, compare={"from": "0002-01-01", "to": "0002-01-01"})
    assert explicit["isError"] is False, explicit["content"]

    assert refusal(call("query", **day, compare="year_over_year")) == (
        f"The period `compare` (year_over_year) asks for begins on 0001-01-05: {RANGE}")
    assert refusal(call("query", **{"from": "0002-01-01", "to": "0002-01-03"},
                        compare="previous_period")) == (
        f"The period `compare` (previous_period) asks for begins on 0001-12-29: {RANGE}")
    assert refusal(call("query", **day, compare={"from": "0001-12-31", "to": "0002-01-01"})) \
        == f"`compare.from` is 0001-12-31: {RANGE}"
    assert refusal(call("query", **day, compare={"from": "9998-12-31", "to": "9999-01-01"})) \
        == f"`compare.to` is 9999-01-01: {RANGE}"
