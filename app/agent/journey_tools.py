"""The tools that follow visitors and visits: `retention` (do visitors come back?) and `paths`
(where do visits go after a page, or come from before it?), docs/AGENTS.md. Their arguments
are checked in code (retention.validate, paths.validate), as the read surface's
(app.agent.read_tools), for refusals that name the argument and the valid values."""
from typing import Any

from app.agent.catalogue import PERIOD_KEYS, checked_arguments, tool
from app.agent.read_tools import FILTERS
from app.agent.text import render_paths, render_retention
from app.analytics import paths, retention
from app.analytics.filters import parse_filters
from app.analytics.period import Period
from models import Site

OBJECTS = {"type": "array", "items": {"type": "object"}}  # described in docs/AGENTS.md
PAGE_OR_GOAL = {"type": "object", "description": "{\"page\"|\"goal\": ...}"}


def _result(properties: dict[str, Any]) -> dict[str, Any]:
    """The output schema: the tool's own fields' types, required; the envelope (site, from, to,
    timezone, estimated, warnings) as every tool's, left out: the catalogue stays small."""
    return {"type": "object", "properties": properties, "required": list(properties)}


VISIT_FILTERS = {**FILTERS, "description": "visit:* only, as in query."}


def _run_retention(site: Site, period: Period, arguments: dict[str, Any]) -> dict[str, Any]:
    checked = retention.validate(arguments)
    filters = parse_filters(arguments.get("filters"), visit_only=True)
    explicit = any(arguments.get(key) is not None for key in PERIOD_KEYS)
    return retention.retention(site, period, filters=filters, explicit=explicit, **checked)


RETENTION = tool(
    "retention", "Retention",
    "Cohorts of visitors by their first (or each) visit's interval; % back in each later one.",
    checked_arguments({
        "interval": {"type": "string", "enum": list(retention.INTERVALS)},
        "cohort": {"type": "string", "enum": list(retention.COHORTS)},
        "return_on": {"type": "object", "description": "{\"page\"|\"goal\"|\"event\": ...}; "
                                                       "default any visit."},
        "intervals": {"type": "integer", "minimum": 1, "maximum": retention.MAX_INTERVALS},
        "filters": VISIT_FILTERS},
        [], list_periods=False),
    _result({
        "interval": {"type": "string"}, "cohort": {"type": "string"},
        "return_on": {"type": ["object", "null"]}, "current_interval": {"type": "string"},
        "cohorts": OBJECTS, "average": {"type": "object"}}),
    _run_retention, render_retention, names_zone=True)


def _run_paths(site: Site, period: Period, arguments: dict[str, Any]) -> dict[str, Any]:
    checked = paths.validate(arguments)
    filters = parse_filters(arguments.get("filters"), visit_only=True)
    return paths.paths(site, period, filters=filters, **checked)


PATHS = tool(
    "paths", "Paths",
    "Where visits go after `start` or came from before `end` (neither: from the entry).",
    checked_arguments({
        "start": PAGE_OR_GOAL, "end": PAGE_OR_GOAL,
        "steps": {"type": "integer", "minimum": 1, "maximum": paths.MAX_STEPS},
        "limit": {"type": "integer", "minimum": 1, "maximum": paths.MAX_LIMIT},
        "filters": VISIT_FILTERS},
        [], list_periods=False),
    _result({"direction": {"type": "string"}, "anchor": {"type": "string"},
                   "visits": {"type": "integer"}, "steps": OBJECTS, "links": OBJECTS,
                   "top_paths": OBJECTS}),
    _run_paths, render_paths, names_zone=True)

JOURNEY_TOOLS = [RETENTION, PATHS]
