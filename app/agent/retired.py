"""The tools `query` replaced: no longer in tools/list, and a call to one is a tool error whose
sentence gives the `query` call that answers it, with the caller's own period, limit and
filters, as exact JSON arguments the agent can send."""
from collections.abc import Callable
from typing import Any

import orjson

from app.agent.protocol import Tool, ToolError, ToolOutput

PASSED_ON = ("from", "to", "period")  # as given: `query` validates them


def _limit(arguments: dict[str, Any], default: int = 10) -> int:
    value = arguments.get("limit")
    return value if isinstance(value, int) and not isinstance(value, bool) \
        and 1 <= value <= 1000 else default


def _is(dimension: str, value: Any) -> list[list[Any]]:
    return [["is", dimension, [value]]] if isinstance(value, str) and value else []


def _count_events(a: dict[str, Any]) -> dict[str, Any]:
    filters = [*_is("event:type", a.get("type")), *_is("event:name", a.get("name"))]
    return {"metrics": ["events"], "dimensions": ["time:day"],
            **({"filters": filters} if filters else {})}


def _top_pages(a: dict[str, Any]) -> dict[str, Any]:
    return {"metrics": ["pageviews", "visitors"], "dimensions": ["event:page"],
            "filters": [["is", "event:type", ["pageview"]]], "limit": _limit(a)}


def _top_sources(a: dict[str, Any]) -> dict[str, Any]:
    return {"metrics": ["visits", "visitors"], "dimensions": ["visit:source"],
            "limit": _limit(a)}


def _goal_conversions(a: dict[str, Any]) -> dict[str, Any]:
    filters = _is("event:goal", a.get("goal"))
    return {"metrics": ["events", "visits", "conversion_rate"], "dimensions": ["event:goal"],
            **({"filters": filters} if filters else {}), "limit": _limit(a)}


RETIRED: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "count_events": _count_events,
    "get_top_pages": _top_pages,
    "get_top_sources": _top_sources,
    "get_goal_conversions": _goal_conversions,
}


def query_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The `query` arguments that answer the retired tool `name` called with `arguments`."""
    arguments = arguments if isinstance(arguments, dict) else {}
    return {**RETIRED[name](arguments),
            **{key: arguments[key] for key in PASSED_ON if isinstance(arguments.get(key), str)}}


def sentence(name: str, arguments: dict[str, Any]) -> str:
    call = orjson.dumps(query_call(name, arguments)).decode()
    return f"{name} is retired. Call the query tool with these arguments instead: {call}"


def _retired(name: str) -> Tool:
    def handler(_site: Any, arguments: dict[str, Any]) -> ToolOutput:
        raise ToolError(sentence(name, arguments))

    return Tool(name, name, "Retired: see query.", {"type": "object"}, {"type": "object"},
                handler, listed=False)


RETIRED_TOOLS = [_retired(name) for name in RETIRED]
