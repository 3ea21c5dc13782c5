"""The database handle every model binds to, and the field types they share."""
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import orjson
from peewee import Database, DatabaseProxy, Field, Model

_reading_from: ContextVar[Database | None] = ContextVar("reading_from", default=None)


class RoutedDatabase(DatabaseProxy):
    """The primary database (`initialize`, as any DatabaseProxy), or, within `reading_from`,
    another one: a read replica (app.storage.db). The route is a context variable, so it holds for
    the request's thread and for what it hands to other threads with its context
    (contextvars.copy_context), never for another request's thread: a worker's concurrent
    requests write to the primary while one reads from the replica. Peewee binds a model to one
    database handle for the whole process; `Model.bind_ctx` rebinds it for every thread."""

    def __getattr__(self, attr: str) -> Any:
        target = _reading_from.get()
        return getattr(self.obj if target is None else target, attr)

    @property
    def target(self) -> Database:
        """The database this context's statements go to."""
        routed = _reading_from.get()
        return self.obj if routed is None else routed

    @contextmanager
    def reading_from(self, other: Database) -> Iterator[None]:
        """Every statement of the block (and of the threads it starts with its context) goes
        to `other`."""
        token = _reading_from.set(other)
        try:
            yield
        finally:
            _reading_from.reset(token)


# Bound to a real database by app.storage.db.init_app; nothing connects at import time.
database = RoutedDatabase()


class JSONField(Field):
    """A JSON document: JSONB on PostgreSQL, TEXT on SQLite (see app.storage.db field_types)."""

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
