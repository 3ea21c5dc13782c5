"""The schemas' building blocks: marshmallow fields with the strictness the ingest contract
needs, shared by every schema, and loading payloads with them.

Loading has a compiled fast path for the hot endpoint. marshmallow is the contract: the
schemas define every rule, produce the error messages and the OpenAPI document. Checking 50 events
field by field in marshmallow costs about 1.3 ms, more than the rest of the request; so for
/api/events the same schema is also compiled, through apispec's JSON Schema conversion, into a
jsonschema-rs validator (about 15 µs). A body that passes the compiled check plus `extra_check`
(the rules JSON Schema cannot express) is used as parsed; any other body goes through marshmallow,
which accepts it or names the offending field. The compiled check is never looser than marshmallow:
tests/tracking/test_validation_paths.py holds the two to that.
"""
import math
import re
from collections.abc import Callable
from datetime import UTC
from decimal import Decimal
from typing import Any

import jsonschema_rs
import orjson
from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from marshmallow import Schema, ValidationError, fields

from app.ingest.privacy import EMAIL_IN_ID, EMAIL_IN_ID_PATTERN, may_hold_email
from models.site import utcnow

MAX_PROPERTIES_BYTES = 16 * 1024
# Levels of objects and arrays in a free-form object. orjson cannot write more than 254 at all,
# and the store wraps properties in two more levels (the event, the list of events).
MAX_JSON_DEPTH = 64
MAX_EPOCH_MS = 4_102_444_800_000  # 2100-01-01: anything later is a unit mistake
# How late an event may arrive: a tracker's offline backlog is days, a clock in the wrong
# century is an error. Later, the whole request is refused (docs/API.md, "Conventions").
MAX_EVENT_AGE_DAYS = 400
MAX_EVENT_AGE_MS = MAX_EVENT_AGE_DAYS * 86_400_000
_ARRIVES_TOO_LATE = f"an event may arrive at most {MAX_EVENT_AGE_DAYS} days after it happened."
BEFORE_ITS_BATCH = (f"More than {MAX_EVENT_AGE_DAYS} days before the batch's timestamp: "
                    f"{_ARRIVES_TOO_LATE}")
TOO_LONG_AGO = f"More than {MAX_EVENT_AGE_DAYS} days ago: {_ARRIVES_TOO_LATE}"
NUL_ESCAPE = b"\\u0000"  # how NUL appears in JSON text
# ...unless its backslash is itself escaped: `\\u0000` is the six characters \u0000, no NUL.
_NUL_IN_JSON = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")


def holds_nul(json_text: bytes) -> bool:
    """Whether JSON text writes a NUL character: its escape after an even number of
    backslashes. The substring test first, so that text without one costs a search in C."""
    return NUL_ESCAPE in json_text and _NUL_IN_JSON.search(json_text) is not None


class Text(fields.String):
    """A string without NUL characters."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str:
        text = super()._deserialize(value, attr, data, **kwargs)
        if "\x00" in text:
            raise ValidationError("NUL characters are not allowed.")
        return text


class OpaqueId(Text):
    """An id the client chose (a user id, an anonymous id): never an e-mail address, in any of
    the disguises app.ingest.privacy.may_hold_email knows. The document says so as a pattern the id
    may not match, which the compiled check of app.web.schema applies too."""

    def __init__(self, **kwargs: Any) -> None:
        metadata = {"not": {"type": "string", "pattern": EMAIL_IN_ID_PATTERN},
                    **kwargs.pop("metadata", {})}
        super().__init__(metadata=metadata, **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str:
        text = super()._deserialize(value, attr, data, **kwargs)
        if may_hold_email(text):
            raise ValidationError(EMAIL_IN_ID)
        return text


def epoch_ms_now() -> int:
    return int(utcnow().replace(tzinfo=UTC).timestamp() * 1000)


def not_too_long_ago(epoch_ms: float | Decimal) -> None:
    """A validator: an event's own time (epoch ms) at most MAX_EVENT_AGE_DAYS before now. One
    before 1970 or after 2100 is left to the field's Range."""
    if 0 <= epoch_ms <= MAX_EPOCH_MS and epoch_ms < epoch_ms_now() - MAX_EVENT_AGE_MS:
        raise ValidationError(TOO_LONG_AGO)


class Number(fields.Float):
    """A JSON number: not a numeric string, not a boolean, finite."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValidationError("Not a valid number (a JSON number is required).")
        return super()._deserialize(value, attr, data, **kwargs)


def nesting_exceeds(value: Any, limit: int) -> bool:
    """Whether `value` has more than `limit` levels of objects and arrays (iteratively)."""
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        pending.extend((child, depth + 1) for child in children
                       if isinstance(child, (dict, list)))
    return False


class JSONObject(fields.Dict):
    """A free-form JSON object, at most MAX_PROPERTIES_BYTES serialized and MAX_JSON_DEPTH
    levels deep, without NUL."""

    TOO_DEEP = f"Nested too deeply: at most {MAX_JSON_DEPTH} levels of objects and arrays."

    @staticmethod
    def problem(value: Any) -> str | None:
        """Why `value` (already a JSON object or None) is not acceptable, or None."""
        if value is None:
            return None
        try:
            encoded = orjson.dumps(value)
        except orjson.JSONEncodeError:  # deeper than orjson writes: never storable
            return JSONObject.TOO_DEEP
        if len(encoded) > MAX_PROPERTIES_BYTES:
            return f"Too large: at most {MAX_PROPERTIES_BYTES} bytes as JSON, got {len(encoded)}."
        if holds_nul(encoded):
            return "NUL characters are not allowed."
        # Counting brackets (in C) bounds the depth; walk the value only when it might be deep.
        if (encoded.count(b"{") + encoded.count(b"[") > MAX_JSON_DEPTH
                and nesting_exceeds(value, MAX_JSON_DEPTH)):
            return JSONObject.TOO_DEEP
        return None

    @staticmethod
    def all_acceptable(values: list[dict[str, Any]]) -> bool:
        """Whether every one of `values` passes `problem` (NUL aside), in one pass if it can.

        Encoded together: none is larger than all of them, and none is deeper than its own
        brackets, so few brackets beyond one per object bound every depth. Otherwise each one
        is looked at on its own.
        """
        try:
            encoded = orjson.dumps(values)
        except orjson.JSONEncodeError:
            return False
        extra_brackets = encoded.count(b"{") + encoded.count(b"[") - 1 - len(values)
        if len(encoded) <= MAX_PROPERTIES_BYTES and extra_brackets < MAX_JSON_DEPTH:
            return True
        return not any(JSONObject.problem(value) for value in values)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> dict:
        mapping = super()._deserialize(value, attr, data, **kwargs)
        problem = self.problem(mapping)
        if problem:
            raise ValidationError(problem)
        return mapping


class Flag(fields.Boolean):
    """A JSON boolean: not 1, not "true"."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> bool:
        if not isinstance(value, bool):
            raise ValidationError("Not a valid boolean (true or false is required).")
        return value


class ExactNumber(fields.Decimal):
    """A JSON number read exactly, as `json_object_exact` gives it: an int or a Decimal.

    Not a float (inexact: the body was parsed the wrong way), not a boolean, not a string.
    """

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Decimal:
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            raise ValidationError("Not a valid number (a JSON number is required).")
        return super()._deserialize(value, attr, data, **kwargs)


def whole_number(value: Any) -> int | None:
    """`value` as the integer it is in JSON Schema's sense (1999, 1999.0, 1.999e3, an integral
    Decimal), or None: 1999.5, "1999", true, NaN and the infinities are not integers."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        return int(value)
    return None


class StrictInteger(fields.Integer):
    """A JSON number that is an integer, as JSON Schema's `integer` (the document's type) says:
    1999, 1999.0 and 1.999e3 are all the integer 1999; 1999.5, "1999", true, NaN and the
    infinities are not integers.

    marshmallow's Integer(strict=True) refuses 1999.0, a float, which the document calls an
    integer (and so does the compiled check of app.web.schema). The number arrives as the body
    reader made it: an int, a float from `json_object`, or a Decimal from `json_object_exact`
    (exact, for money). Both readers refuse a number beyond a double's range, so no value here
    has more than 309 digits. The field's own validators (Range) then judge the integer.
    """

    NOT_AN_INTEGER = "Not a valid integer (a whole JSON number such as 1999 is required)."

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> int:
        whole = whole_number(value)
        if whole is None:
            raise ValidationError(self.NOT_AN_INTEGER)
        return whole


def _decimal_as_float(value: Any) -> float:
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError


class ExactJSONObject(JSONObject):
    """A JSONObject from a body read by `json_object_exact`: its Decimals become floats, as
    `json_object` would have parsed them (free-form properties are not money)."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> dict:
        if isinstance(value, dict):
            try:
                value = orjson.loads(orjson.dumps(value, default=_decimal_as_float))
            except orjson.JSONEncodeError:  # deeper than orjson writes
                raise ValidationError(JSONObject.TOO_DEEP) from None
        return super()._deserialize(value, attr, data, **kwargs)


def json_schema_of(schema: type[Schema]) -> dict[str, Any]:
    """The schema as one self-contained JSON Schema (nested schemas inlined)."""
    plugin = MarshmallowPlugin(schema_name_resolver=lambda _schema: None)
    APISpec("egis", "1.0.0", "3.1.0", plugins=[plugin])
    return plugin.converter.schema2jsonschema(schema)


class FastLoader:
    def __init__(self, schema: type[Schema],
                 extra_check: Callable[[dict[str, Any]], bool] = lambda _data: True) -> None:
        self.schema = schema()
        self.extra_check = extra_check
        self.compiled = jsonschema_rs.validator_for(json_schema_of(schema))

    def passes_fast_check(self, data: dict[str, Any]) -> bool:
        return self.compiled.is_valid(data) and self.extra_check(data)

    def load(self, data: dict[str, Any], fast: bool = True) -> dict[str, Any]:
        """The validated payload; raises marshmallow.ValidationError naming the field.

        `fast=False` skips the compiled check (the caller saw something only marshmallow names).
        """
        if fast and self.passes_fast_check(data):
            return data
        return self.schema.load(data)
