"""marshmallow fields with the strictness the ingest contract needs, shared by every schema."""
from typing import Any

import orjson
from marshmallow import ValidationError, fields

MAX_PROPERTIES_BYTES = 16 * 1024
MAX_EPOCH_MS = 4_102_444_800_000  # 2100-01-01: anything later is a unit mistake
NUL_ESCAPE = b"\\u0000"  # how NUL appears in JSON text


class Text(fields.String):
    """A string without NUL characters."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str:
        text = super()._deserialize(value, attr, data, **kwargs)
        if "\x00" in text:
            raise ValidationError("NUL characters are not allowed.")
        return text


class Number(fields.Float):
    """A JSON number: not a numeric string, not a boolean, finite."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValidationError("Not a valid number (a JSON number is required).")
        return super()._deserialize(value, attr, data, **kwargs)


class JSONObject(fields.Dict):
    """A free-form JSON object, at most MAX_PROPERTIES_BYTES serialized, without NUL."""

    @staticmethod
    def problem(value: Any) -> str | None:
        """Why `value` (already a JSON object or None) is not acceptable, or None."""
        if value is None:
            return None
        encoded = orjson.dumps(value)
        if len(encoded) > MAX_PROPERTIES_BYTES:
            return f"Too large: at most {MAX_PROPERTIES_BYTES} bytes as JSON, got {len(encoded)}."
        if NUL_ESCAPE in encoded:
            return "NUL characters are not allowed."
        return None

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
