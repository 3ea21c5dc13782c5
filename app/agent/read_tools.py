"""The read surface's three tools: `describe_data`, `query` and `funnel` (docs/AGENTS.md).

Their arguments are validated in code (app.analytics: query.parse_query, filters.parse_filters,
funnel.validate) rather than by marshmallow: an agent needs one sentence naming the argument,
the valid values and the closest one, which marshmallow's per-field message dicts do not give.
So the input schemas are written here as JSON Schema, without recursive `$ref` (some MCP
clients reject them): a filter is described as an array and its structure checked in code.
"""
import logging
from collections.abc import Callable
from datetime import date
from typing import Any

from flask import current_app

from app.agent import batch, capacity
from app.agent.protocol import Tool, ToolError, ToolOutput
from app.agent.text import render_describe, render_funnel, render_query
from app.analytics import describe, funnel, query, reading
from app.analytics.errors import ArgumentError, closest
from app.analytics.filters import parse_filters
from app.analytics.period import PERIODS, Period, resolve_period
from app.analytics.vocabulary import DIMENSION_NAMES, METRICS
from app.storage.dialect import QueryShapeError, QueryTimeoutError
from app.web.schema import whole_number
from models import Site

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_SECONDS = 20.0  # EGIS_AGENT_QUERY_SECONDS: a statement's time limit
TIMEOUT = ("The query ran longer than {seconds:g} s and was stopped. Narrow it: a shorter period, "
           "fewer dimensions (time:day rather than time:hour), or filters.")
BATCH_SPENT = ("This batch's calls have taken the {seconds:g} s one call may take, together, so "
               "this call was {what}: send it in another POST.")
TOO_COMPLEX = ("The database cannot run a query of this shape: give fewer filter conditions or "
               "values, or nest them less.")


def answer_or_tool_error(run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """`run()` through the one read entry (app.analytics.reading.answer: merge, replica or
    primary, one snapshot, the configured time limit), so the answer counts every event stored
    before the call. The read's warnings join the answer's; a stopped statement, or one the
    database refused for its shape (never a 503 that blames the database), becomes a
    ToolError. In a batch, the call has the time its members before it left of that limit
    (app.agent.batch). A worker runs at most capacity.CALLS_AT_ONCE calls at once: past that,
    a ToolError says to call again."""
    limit = float(current_app.config.get("AGENT_QUERY_SECONDS", DEFAULT_TIMEOUT_SECONDS))
    spent = batch.seconds_spent()
    seconds = limit if spent is None else limit - spent
    if seconds <= 0:
        raise ToolError(BATCH_SPENT.format(seconds=limit, what="not run"))
    try:
        with capacity.slot() as free:
            if not free:
                raise ToolError(capacity.BUSY.format(count=capacity.CALLS_AT_ONCE))
            found, warnings = reading.answer(run, seconds)
    except QueryTimeoutError:
        if spent:
            raise ToolError(BATCH_SPENT.format(seconds=limit, what="stopped")) from None
        raise ToolError(TIMEOUT.format(seconds=limit)) from None
    except QueryShapeError as error:
        log.warning("the database refused a tool's query for its shape: %s", error)
        raise ToolError(TOO_COMPLEX) from None
    return {**found, "warnings": [*found.get("warnings", []), *warnings]} if warnings else found


def tool_output(structured: dict[str, Any], render: Callable[[dict[str, Any]], str]
                ) -> ToolOutput:
    """The answer and its text; a warning the tool's text does not render goes at its end."""
    text = render(structured)
    unsaid = [warning for warning in structured.get("warnings", []) if warning not in text]
    return ToolOutput(structured, "\n".join([text, *(f"Warning: {w}" for w in unsaid)]))


def _date(arguments: dict[str, Any], name: str) -> date | None:
    value = arguments.get(name)
    if value is None:
        return None
    try:
        if isinstance(value, str) and len(value) == len("YYYY-MM-DD"):
            return date.fromisoformat(value)
    except ValueError:
        pass
    raise ArgumentError(f"Invalid {name} {value!r}: give a date as YYYY-MM-DD.")


PERIOD_PROPERTIES: dict[str, Any] = {
    "from": {"type": "string", "format": "date"}, "to": {"type": "string", "format": "date"},
    "period": {"type": "string", "enum": list(PERIODS)},
}
PERIOD_KEYS = tuple(PERIOD_PROPERTIES)


def catalogue_schema(schema: dict[str, Any], top: bool = True) -> dict[str, Any]:
    """An output schema as the catalogue lists it: types and the top level's required names;
    no `additionalProperties: false` and no nested `required` (a client's check of a result
    loses little, and the catalogue a tenth of its size)."""
    compact: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "additionalProperties" and value is False:
            continue
        if key == "required" and not top:
            continue
        if key == "properties":
            value = {name: catalogue_schema(part, False) for name, part in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            value = catalogue_schema(value, False)
        compact[key] = value
    return compact


def _tool(name: str, title: str, description: str, properties: dict[str, Any],
          required: list[str], output: dict[str, Any],
          run: Callable[[Site, Period, dict[str, Any]], dict[str, Any]],
          render: Callable[[dict[str, Any]], str]) -> Tool:
    valid = (*properties, *PERIOD_KEYS)

    def handler(site: Site, arguments: dict[str, Any]) -> ToolOutput:
        try:
            for key in arguments:
                if key not in valid:
                    raise ArgumentError(f"Unknown argument {key!r} of {name}.{closest(key, valid)}"
                                        f" Valid arguments: {', '.join(valid)}.")
            period = resolve_period(site.timezone, _date(arguments, "from"),
                                         _date(arguments, "to"), arguments.get("period"))
            found = answer_or_tool_error(lambda: run(site, period, arguments))
        except ArgumentError as error:
            raise ToolError(str(error)) from None
        structured = {"site": site.domain, "from": period.first.isoformat(),
                      "to": period.last.isoformat(), "timezone": period.timezone, **found}
        return tool_output(structured, render)

    input_schema = {"type": "object", "properties": {**properties, **PERIOD_PROPERTIES},
                    "required": required, "additionalProperties": False}
    output_schema = {"type": "object", "properties": {**ENVELOPE, "warnings": WARNINGS, **output},
                     "required": [*ENVELOPE, *output]}
    output_schema = catalogue_schema(output_schema)
    return Tool(name, title, description, input_schema, output_schema, handler)


ENVELOPE: dict[str, Any] = {"site": {"type": "string"}, "from": {"type": "string"},
                            "to": {"type": "string"}, "timezone": {"type": "string"},
                            "estimated": {"type": "boolean"}}
NUMBERS = {"type": "array", "items": {"type": ["number", "null"]}}
WARNINGS = {"type": "array", "items": {"type": "string"}}
FILTERS = {
    "type": "array", "items": {"type": "array"},
    "description": "All must hold. Each [op, dimension, [values]], op is, is_not, contains, "
                   "contains_not, matches, matches_not (`*` any run but `/`, `**` any run; "
                   "whole value), optionally ending {\"case_sensitive\": false}; or "
                   "[\"and\", [filters]], [\"or\", [filters]], [\"not\", filter].",
}


def _run_query(site: Site, period: Period, arguments: dict[str, Any]) -> dict[str, Any]:
    return query.run_query(site, period, query.parse_query(arguments))


QUERY = _tool(
    "query", "Query",
    "Metrics x dimensions x filters, as Plausible's Stats API v2. A visit is a session with "
    "a page view in the period, its visit:* values its first page view's. Definitions, goals, "
    "events and property keys: describe_data.",
    {"metrics": {"type": "array", "minItems": 1, "maxItems": 10,
                 "items": {"type": "string", "enum": list(METRICS)}},
     "dimensions": {"type": "array", "maxItems": 3, "items": {"type": "string"},
                    "description": "Breakdowns: " + ", ".join(DIMENSION_NAMES) + "."},
     "filters": FILTERS,
     "compare": {"anyOf": [{"type": "string", "enum": ["previous_period", "year_over_year"]},
                           {"type": "object", "properties": {
                               "from": {"type": "string", "format": "date"},
                               "to": {"type": "string", "format": "date"}},
                            "required": ["from", "to"], "additionalProperties": False}]},
     "order_by": {"type": "array", "items": {"type": "array", "minItems": 2, "maxItems": 2,
                                             "items": {"type": "string"}},
                  "description": "[[metric or dimension, \"asc\"|\"desc\"]]; default: first "
                                 "metric descending, time ascending."},
     "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100},
     "offset": {"type": "integer", "minimum": 0, "default": 0}},
    ["metrics"],
    {"metrics": {"type": "array", "items": {"type": "string"}},
     "dimensions": {"type": "array", "items": {"type": "string"}},
     "results": {"type": "array", "items": {"type": "object", "properties": {
         "dimensions": {"type": "array", "items": {"type": ["string", "null"]}},
         "metrics": NUMBERS,
         "comparison": {"type": "object", "properties": {"metrics": NUMBERS,
                                                         "change": NUMBERS}}},
         "required": ["dimensions", "metrics"]}},
     "totals": NUMBERS, "total_rows": {"type": "integer"},
     "warnings": WARNINGS},
    _run_query, render_query)


def _run_funnel(site: Site, period: Period, arguments: dict[str, Any]) -> dict[str, Any]:
    unit = arguments.get("unit", "visit")
    raw_window = arguments.get("window_hours", funnel.DEFAULT_WINDOW_HOURS)
    whole = whole_number(raw_window)  # 24.0 is 24, as JSON Schema's integer says
    window = raw_window if whole is None else whole
    steps = funnel.validate(arguments.get("steps"), unit, window)
    filters = parse_filters(arguments.get("filters"), visit_only=True)
    return funnel.funnel(site, period, steps, unit, window, filters)


STEP_NUMBERS = {"type": ["number", "null"]}
FUNNEL = _tool(
    "funnel", "Funnel",
    "Visits (or visitors) through 2-8 ordered steps: counts, % of step 1 and of the step "
    "before, drop-off. Step k needs a matching event at or after step k-1.",
    {"steps": {"type": "array", "minItems": 2, "maxItems": 8, "items": {
        "type": "object", "properties": {
            "page": {"type": "string", "description": "A path or pattern (* and **)."},
            "goal": {"type": "string"}, "event": {"type": "string",
                                                  "description": "A custom event's name."},
            "label": {"type": "string"}}, "additionalProperties": False},
        "description": "Each {\"page\"|\"goal\"|\"event\": ..., \"label\"?: ...}."},
     "unit": {"type": "string", "enum": ["visit", "visitor"], "default": "visit"},
     "window_hours": {"type": "integer", "minimum": 1, "maximum": funnel.MAX_WINDOW_HOURS,
                      "default": funnel.DEFAULT_WINDOW_HOURS,
                      "description": "Visitor unit: hours from its first step-1 event."},
     "filters": {**FILTERS, "description": "visit:* filters only, as in query."}},
    ["steps"],
    {"unit": {"type": "string"}, "window_hours": {"type": ["integer", "null"]},
     "steps": {"type": "array", "items": {"type": "object", "properties": {
         "label": {"type": "string"}, "count": {"type": "integer"},
         "conversion_rate": STEP_NUMBERS, "step_conversion_rate": STEP_NUMBERS,
         "dropoff": {"type": ["integer", "null"]}},
         "required": ["label", "count", "conversion_rate", "step_conversion_rate",
                      "dropoff"]}}},
    _run_funnel, render_funnel)


def _run_describe(site: Site, period: Period, arguments: dict[str, Any]) -> dict[str, Any]:
    extra = {key: arguments[key] for key in ("dimension", "search", "limit")
             if arguments.get(key) is not None}
    found = describe.describe(site, period, **extra)
    found.pop("timezone", None)  # the envelope says it
    return found


DESCRIBE = _tool(
    "describe_data", "Describe the data",
    "Start here: every metric and dimension with its definition, and what the site has in the "
    "period (events by type, goals, custom events, property keys, first and last event). With "
    "`dimension`: its values by visitors.",
    {"dimension": {"type": "string", "description": "List this dimension's values."},
     "search": {"type": "string", "description": "Only values containing this (any case)."},
     "limit": {"type": "integer", "minimum": 1, "maximum": 1000,
               "default": describe.DEFAULT_VALUES}},
    [],
    {"metrics": {"type": "object"}, "dimensions": {"type": "object"}},
    _run_describe, render_describe)

READ_TOOLS = [DESCRIBE, QUERY, FUNNEL]
