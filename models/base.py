"""The database handle every model binds to, and the field types they share."""
from typing import Any

import orjson
from peewee import DatabaseProxy, Field, Model

# Bound to a real database by app.db.init_app; nothing connects at import time.
database = DatabaseProxy()


class JSONField(Field):
    """A JSON document: JSONB on PostgreSQL, TEXT on SQLite (see app.db field_types)."""

    field_type = "JSON"

    def db_value(self, value: Any) -> str | None:
        return None if value is None else orjson.dumps(value).decode()

    def python_value(self, value: Any) -> Any:
        # psycopg2 decodes JSONB itself; SQLite hands back the text.
        if isinstance(value, (str, bytes)):
            return orjson.loads(value)
        return value


class BaseModel(Model):
    class Meta:
        database = database
        legacy_table_names = False
