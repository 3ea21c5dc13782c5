"""The read surface's three tools: `describe_data`, `query` and `funnel` (docs/AGENTS.md).

Their arguments are validated in code (app.analytics: query.parse_query, filters.parse_filters,
funnel.validate) rather than by marshmallow: an agent needs one sentence naming the argument,
the valid values and the closest one, which marshmallow's per-field message dicts do not give.
So the input schemas are written here as JSON Schema, without recursive `$ref` (some MCP
clients reject them): a filter is described as an array and its structure checked in code.
"""
from typing import Any

from app.agent.catalogue import WARNINGS, checked_arguments, listed_result, tool
from app.agent.text import render_describe, render_funnel, render_query
from app.analytics import describe, funnel, query
from app.analytics.filters import parse_filters
from app.analytics.period import Period
from app.analytics.vocabulary import DIMENSION_NAMES, METRICS
from app.web.schema import whole_number
from models import Site

NUMBERS = {"type": "array", "items": {"type": ["number", "null"]}}
FILTERS = {
    "type": "array", "items": {"type": "array"},
    "description": "All must hold. Each [op, dimension, [values]], op is, is_not, contains, "
                   "contains_not, matches, matches_not (`*` any run but `/`, `**` any run; "
                   "whole value), optionally ending {\"case_sensitive\": false}; or "
                   "[\"and\", [filters]], [\"or\", [filters]], [\"not\", filter]; "
                   "[\"has_done\"|\"has_not_done\", filter on event:*]: visits with (without) "
                   "a matching event.",
}


def _run_query(site: Site, period: Period, arguments: dict[str, Any]) -> dict[str, Any]:
    return query.run_query(site, period, query.parse_query(arguments))


QUERY = tool(
    "query", "Query",
    "Metrics x dimensions x filters, as Plausible's Stats API v2. A visit: a session with a "
    "page view in the period; its visit:* values are its first page view's. Now: period 5min "
    "or 30min (rolling; a visit with any event in it). Definitions, goals, events, property "
    "keys: describe_data.",
    checked_arguments({"metrics": {"type": "array", "minItems": 1, "maxItems": 10,
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
     "offset": {"type": "integer", "minimum": 0, "default": 0},
     "currency": {"type": "string", "description": "ISO 4217, of the money metrics; default "
                                                   "the period's only one."}},
    ["metrics"], rolling=True),
    listed_result({"metrics": {"type": "array", "items": {"type": "string"}},
     "dimensions": {"type": "array", "items": {"type": "string"}},
     "results": {"type": "array", "items": {"type": "object", "properties": {
         "dimensions": {"type": "array", "items": {"type": ["string", "null"]}},
         "metrics": NUMBERS,
         "comparison": {"type": "object", "properties": {"metrics": NUMBERS,
                                                         "change": NUMBERS}}},
         "required": ["dimensions", "metrics"]}},
     "totals": NUMBERS, "total_rows": {"type": "integer"}, "currency": {"type": ["string", "null"]},
     "warnings": WARNINGS}),
    _run_query, render_query, names_zone=True)


def _run_funnel(site: Site, period: Period, arguments: dict[str, Any]) -> dict[str, Any]:
    unit = arguments.get("unit", "visit")
    raw_window = arguments.get("window_hours", funnel.DEFAULT_WINDOW_HOURS)
    whole = whole_number(raw_window)  # 24.0 is 24, as JSON Schema's integer says
    window = raw_window if whole is None else whole
    steps = funnel.validate(arguments.get("steps"), unit, window)
    filters = parse_filters(arguments.get("filters"), visit_only=True)
    return funnel.funnel(site, period, steps, unit, window, filters)


STEP_NUMBERS = {"type": ["number", "null"]}
FUNNEL = tool(
    "funnel", "Funnel",
    "Visits (or visitors) through 2-8 ordered steps: counts, % of step 1 and of the step "
    "before, drop-off. Step k needs a matching event at or after step k-1.",
    checked_arguments({"steps": {"type": "array", "minItems": 2, "maxItems": 8, "items": {
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
     "filters": {**FILTERS, "description": "visit:* filters and has_done only, as in query."}},
    ["steps"], list_periods=False),
    listed_result({"unit": {"type": "string"}, "window_hours": {"type": ["integer", "null"]},
     "steps": {"type": "array", "items": {"type": "object", "properties": {
         "label": {"type": "string"}, "count": {"type": "integer"},
         "conversion_rate": STEP_NUMBERS, "step_conversion_rate": STEP_NUMBERS,
         "dropoff": {"type": ["integer", "null"]}},
         "required": ["label", "count", "conversion_rate", "step_conversion_rate",
                      "dropoff"]}}}),
    _run_funnel, render_funnel, names_zone=True)


def _run_describe(site: Site, period: Period, arguments: dict[str, Any]) -> dict[str, Any]:
    extra = {key: arguments[key] for key in ("dimension", "search", "limit")
             if arguments.get(key) is not None}
    found = describe.describe(site, period, **extra)
    found.pop("timezone", None)  # the envelope says it
    return found


DESCRIBE = tool(
    "describe_data", "Describe the data",
    "Start here: every metric and dimension with its definition, and what the site has in the "
    "period (events by type, goals, custom events, property keys, first and last event). With "
    "`dimension`: its values by visitors.",
    checked_arguments({
        "dimension": {"type": "string", "description": "List this dimension's values."},
     "search": {"type": "string", "description": "Only values containing this (any case)."},
     "limit": {"type": "integer", "minimum": 1, "maximum": 1000,
               "default": describe.DEFAULT_VALUES}},
    [], list_periods=False),
    listed_result({"metrics": {"type": "object"}, "dimensions": {"type": "object"},
                   "filters": {"type": "object"}}),
    _run_describe, render_describe, names_zone=True)

READ_TOOLS = [DESCRIBE, QUERY, FUNNEL]
