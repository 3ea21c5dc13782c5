"""The tool catalogue's one factory (`tool`) and one envelope (`envelope`, its schema
schemas.Result): what every analytics tool does around its own query. A call's arguments are
read (`Arguments`: by a marshmallow schema, or checked in code for the read surface), its
period resolved in the site's zone, its reads run through the one read entry
(app.analytics.reading.answer) within the call's time limit, and its answer enveloped (site,
days, zone) and rendered as text. The tools themselves are listed in app.agent.tools and
app.agent.read_tools.
"""
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any

from flask import current_app
from marshmallow import Schema, ValidationError

from app.agent import batch, capacity
from app.agent.protocol import Tool, ToolError, ToolOutput
from app.agent.schemas import Result
from app.analytics import reading
from app.analytics.errors import ArgumentError, closest
from app.analytics.period import PERIODS, ROLLING, Period, resolve_period
from app.storage.dialect import QueryShapeError, QueryTimeoutError
from app.web.errors import format_validation_messages
from app.web.schema import json_schema_of
from models import Site

log = logging.getLogger(__name__)

Run = Callable[[Site, Period, dict[str, Any]], dict[str, Any]]
Render = Callable[[dict[str, Any]], str]

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
# `query`'s: the rolling windows too
ROLLING_PERIOD_PROPERTIES: dict[str, Any] = {
    **PERIOD_PROPERTIES, "period": {"type": "string", "enum": [*PERIODS, *ROLLING]}}


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


# The envelope as output schemas list it: schemas.Result's fields, compact (catalogue_schema).
_RESULT = catalogue_schema(json_schema_of(Result))["properties"]
ENVELOPE: dict[str, Any] = {name: part for name, part in _RESULT.items() if name != "warnings"}
WARNINGS: dict[str, Any] = _RESULT["warnings"]


def envelope(site: Site, period: Period, found: dict[str, Any], names_zone: bool
             ) -> dict[str, Any]:
    """A tool's answer: its site and days, its zone (when `names_zone`, or when it is not
    UTC), and what it found."""
    zone = {"timezone": period.timezone} if names_zone or period.timezone != "UTC" else {}
    first, last = period.bounds()
    return {"site": site.domain, "from": first, "to": last, **zone, **found}


# (from, to, period, the other arguments) of the named tool's call's arguments
Read = Callable[[str, dict[str, Any]],
                tuple[date | None, date | None, str | None, dict[str, Any]]]


@dataclass(frozen=True)
class Arguments:
    """How a tool reads its arguments: its inputSchema, `read`, and what begins the sentence
    of an ArgumentError its period or query raises (`{name}`: the tool's)."""

    input_schema: dict[str, Any]
    read: Read
    refusal: str = ""
    rolling: bool = False  # `period` may be a rolling window (ROLLING)


def schema_arguments(schema: type[Schema]) -> Arguments:
    """Arguments a marshmallow schema loads (app.agent.schemas' *Args)."""
    loader = schema()

    def read(name: str, arguments: dict[str, Any]
             ) -> tuple[date | None, date | None, str | None, dict[str, Any]]:
        try:
            loaded = loader.load(arguments)
        except ValidationError as error:
            raise ToolError(f"Invalid arguments for {name}: "
                            f"{format_validation_messages(error.messages)}") from None
        return loaded.pop("from_", None), loaded.pop("to", None), loaded.pop("period", None), loaded

    return Arguments(json_schema_of(schema), read, "Invalid arguments for {name}: ")


def checked_arguments(properties: dict[str, Any], required: list[str],
                      list_periods: bool = True, rolling: bool = False) -> Arguments:
    """Arguments described as JSON Schema `properties` (with the period's, the rolling windows
    too when `rolling`) and checked in code: an unknown one is refused with the closest valid
    name; the others reach the query whole. Without `list_periods`, `period` is a string whose
    values the other tools' schemas list (the catalogue is read before every conversation;
    resolve_period's refusal names them)."""
    valid = (*properties, *PERIOD_KEYS)

    def read(name: str, arguments: dict[str, Any]
             ) -> tuple[date | None, date | None, str | None, dict[str, Any]]:
        for key in arguments:
            if key not in valid:
                raise ArgumentError(f"Unknown argument {key!r} of {name}.{closest(key, valid)}"
                                    f" Valid arguments: {', '.join(valid)}.")
        return (_date(arguments, "from"), _date(arguments, "to"), arguments.get("period"),
                arguments)

    periods = ROLLING_PERIOD_PROPERTIES if rolling else PERIOD_PROPERTIES
    if not list_periods:
        periods = {**periods, "period": {"type": "string"}}
    return Arguments({"type": "object", "properties": {**properties, **periods},
                      "required": required, "additionalProperties": False}, read,
                     rolling=rolling)


def tool(name: str, title: str, description: str, arguments: Arguments,
         output_schema: dict[str, Any], run: Run, render: Render, names_zone: bool) -> Tool:
    """A catalogue tool: `run(site, period, arguments)` answers a call, enveloped; `render`
    writes its text."""

    def handler(site: Site, raw: dict[str, Any]) -> ToolOutput:
        try:
            first, last, shorthand, rest = arguments.read(name, raw)
            period = resolve_period(site.timezone, first, last, shorthand,
                                    rolling=arguments.rolling)
            found = answer_or_tool_error(lambda: run(site, period, rest))
        except ArgumentError as error:
            raise ToolError(arguments.refusal.format(name=name) + str(error)) from None
        return tool_output(envelope(site, period, found, names_zone), render)

    return Tool(name, title, description, arguments.input_schema, output_schema, handler)


def result_schema(result: type[Schema]) -> dict[str, Any]:
    """The output schema of a result described by a marshmallow schema (a schemas.Result)."""
    return catalogue_schema(json_schema_of(result))


def listed_result(properties: dict[str, Any]) -> dict[str, Any]:
    """The output schema of a result described as JSON Schema `properties`, in the envelope,
    all of them and the envelope's required."""
    return catalogue_schema({"type": "object",
                             "properties": {**ENVELOPE, "warnings": WARNINGS, **properties},
                             "required": [*ENVELOPE, *properties]})
