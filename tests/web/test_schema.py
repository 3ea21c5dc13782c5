"""app.web.schema.StrictInteger: every number JSON Schema calls an integer, as the integer it is,
and nothing else; and the compiled fast path (app.web.schema.FastLoader) agrees with it."""
from decimal import Decimal
from typing import Any

import orjson
import pytest
from marshmallow import Schema, ValidationError, validate

from app.web.schema import (
    MAX_JSON_DEPTH,
    MAX_PROPERTIES_BYTES,
    FastLoader,
    JSONObject,
    StrictInteger,
    holds_nul,
    nesting_exceeds,
)
from tests.fixtures.tracking import batch, deep_value, event, post_json, stored_events

INT64_MAX = 2**63 - 1
NOT_AN_INTEGER = "Not a valid integer (a whole JSON number such as 1999 is required)."
INT64_RANGE = (f"Must be greater than or equal to {-INT64_MAX} and less than or equal to "
               f"{INT64_MAX}.")
LIMIT_RANGE = "Must be greater than or equal to 1 and less than or equal to 100."


class Minor(Schema):  # as revenue_cents, read exactly (Decimal) by json_object_exact
    cents = StrictInteger(validate=validate.Range(-INT64_MAX, INT64_MAX))


class Limit(Schema):  # as the MCP tools' limit, read by orjson (float)
    limit = StrictInteger(validate=validate.Range(1, 100))


def outcome(schema: type[Schema], value: Any) -> Any:
    """The loaded value, or the field's messages."""
    try:
        return next(iter(schema().load({next(iter(schema().fields)): value}).values()))
    except ValidationError as error:
        return next(iter(error.messages.values()))


@pytest.mark.parametrize(("value", "integer"), [
    (1999, 1999), (1999.0, 1999), (1.999e3, 1999), (-575.0, -575), (-0.0, 0),
    (Decimal("10053316.0"), 10053316), (Decimal("1.999E+3"), 1999), (Decimal("-0.00"), 0),
    (Decimal("9223372036854775807.0"), INT64_MAX), (-INT64_MAX, -INT64_MAX),
], ids=str)
def test_whole_numbers_are_the_integers_they_are(value, integer):
    loaded = outcome(Minor, value)
    assert loaded == integer and type(loaded) is int


@pytest.mark.parametrize("value", [
    1999.5, Decimal("1999.5"), Decimal("0.1E-10"), "1999", "", True, False, [], {},
    float("nan"), float("inf"), float("-inf"), Decimal("NaN"), Decimal("Infinity"),
], ids=repr)
def test_anything_else_is_not_an_integer(value):
    assert outcome(Minor, value) == [NOT_AN_INTEGER]


@pytest.mark.parametrize(("value", "answer"), [
    (Decimal("9223372036854775807.0"), INT64_MAX),
    (Decimal("9223372036854775808.0"), [INT64_RANGE]),
    (INT64_MAX + 1, [INT64_RANGE]),
    (Decimal("-9223372036854775807.0"), -INT64_MAX),
    (Decimal("-9223372036854775808.0"), [INT64_RANGE]),
    (1e308, [INT64_RANGE]),
], ids=str)
def test_the_range_judges_the_integer(value, answer):
    assert outcome(Minor, value) == answer


# (value as the body writes it, what marshmallow answers); the fast path must agree.
LIMITS = [("1", 1), ("1.0", 1), ("100", 100), ("100.0", 100), ("1e2", 100), ("10E0", 10),
          ("0", [LIMIT_RANGE]), ("0.0", [LIMIT_RANGE]), ("101", [LIMIT_RANGE]),
          ("101.0", [LIMIT_RANGE]), ("1e3", [LIMIT_RANGE]), ("-1", [LIMIT_RANGE]),
          ("99.5", [NOT_AN_INTEGER]), ("1.5", [NOT_AN_INTEGER]), ('"5"', [NOT_AN_INTEGER]),
          ("true", [NOT_AN_INTEGER]), ("null", ["Field may not be null."]),
          ("[5]", [NOT_AN_INTEGER])]


@pytest.mark.parametrize(("text", "answer"), LIMITS, ids=[text for text, _ in LIMITS])
def test_the_fast_path_agrees_with_marshmallow(text, answer):
    data = orjson.loads(f'{{"limit": {text}}}')
    assert outcome(Limit, data["limit"]) == answer
    loader = FastLoader(Limit)
    assert loader.passes_fast_check(data) is isinstance(answer, int)
    if isinstance(answer, int):
        assert loader.load(data)["limit"] == answer  # as parsed: 100.0 == 100


# --- fields ---------------------------------------------------------------------------------

def test_json_object_problem_edges():
    problem = JSONObject.problem
    assert problem(None) is None
    assert problem({}) is None
    at = {"p": "x" * (MAX_PROPERTIES_BYTES - 8)}
    assert len(orjson.dumps(at)) == MAX_PROPERTIES_BYTES and problem(at) is None
    over = {"p": "x" * (MAX_PROPERTIES_BYTES - 7)}
    assert problem(over) == "Too large: at most 16384 bytes as JSON, got 16385."
    assert problem({"a": ["\x00"]}) == "NUL characters are not allowed."
    assert problem(deep_value(MAX_JSON_DEPTH)) is None
    assert problem(deep_value(MAX_JSON_DEPTH + 1)) == JSONObject.TOO_DEEP
    assert problem(deep_value(300)) == JSONObject.TOO_DEEP  # more than orjson can write
    wide = {f"k{i}": [[{}]] for i in range(200)}  # many brackets, little depth
    assert problem(wide) is None
    assert problem({"s": "[{" * 500}) is None  # brackets inside strings are not depth


def test_nesting_exceeds():
    assert not nesting_exceeds({}, 1)
    assert nesting_exceeds({"a": {}}, 1)
    assert not nesting_exceeds({"a": [1, {"b": []}]}, 4)
    assert nesting_exceeds({"a": [1, {"b": []}]}, 3)
    assert not nesting_exceeds(deep_value(5000), 5000)  # iterative: no RecursionError
    assert nesting_exceeds(deep_value(5000), 4999)



@pytest.mark.parametrize(("text", "holds"), [
    ("a\x00b", True), ("\\\x00", True), ("\\\\\x00", True),  # a NUL after 0, 1, 2 backslashes
    ("C:\\u0000", False), ("\\\\u0000", False), ("plain", False)])  # the text \u0000: no NUL
def test_a_nul_is_its_escape_after_an_even_number_of_backslashes(text, holds):
    assert holds_nul(orjson.dumps({"value": text})) is holds


def test_the_text_backslash_u0000_is_stored_and_a_nul_refused(app, client, std_site):
    literal = event("custom", name="path", properties={"file": "C:\\u0000.txt"})
    stored = post_json(client, "/api/events", batch([literal]), std_site.write_headers())
    assert stored.status_code == 200, stored.get_json()
    assert stored_events(app)[0].properties == {"file": "C:\\u0000.txt"}
    refused = post_json(client, "/api/events",
                        batch([event("custom", name="path", properties={"file": "C:\x00"})]),
                        std_site.write_headers())
    assert refused.status_code == 400
    assert "NUL" in refused.get_json()["error"]
    assert len(stored_events(app)) == 1
