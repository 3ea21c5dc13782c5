"""`flask db upgrade` on a fresh database, twice, on both backends: the schema the migrations
build is the one the models expect, with JSONB on PostgreSQL and the analytics indexes."""
import os

import pytest
from peewee import ModelIndex

from app.cli.db import MIGRATIONS_DIR
from app.storage.db import is_postgres
from models import ALL_MODELS, Event, ServerEvent, database

MIGRATIONS = sorted(name[:-3] for name in os.listdir(MIGRATIONS_DIR)
                    if name[0].isdigit() and name.endswith(".py"))


@pytest.fixture
def upgraded(make_app, fresh_url):
    """An app on the fresh database after `flask db upgrade` twice; yields (app, outputs)."""
    app = make_app(DATABASE_URL=fresh_url)
    runner = app.test_cli_runner()
    outputs = []
    for _ in range(2):
        result = runner.invoke(args=["db", "upgrade"])
        assert result.exit_code == 0, (result.output, result.exception)
        outputs.append(result.stdout.strip())
    with app.app_context(), database.connection_context():
        yield app, outputs


def test_upgrade_twice_applies_everything_then_nothing(upgraded):
    _app, (first, second) = upgraded
    assert first == "Applied: " + ", ".join(MIGRATIONS)
    assert second == "Schema is up to date."
    applied = [row[0] for row in database.execute_sql(
        "SELECT name FROM schema_migration ORDER BY name").fetchall()]
    assert applied == MIGRATIONS


def test_every_model_column_exists(upgraded):
    for model in ALL_MODELS:
        table = model._meta.table_name
        assert database.table_exists(table), table
        columns = {column.name for column in database.get_columns(table)}
        expected = {field.column_name for field in model._meta.sorted_fields}
        assert expected <= columns, (table, expected - columns)


def _indexes(table: str) -> dict[tuple[str, ...], bool]:
    if not is_postgres():
        return {tuple(index.columns): index.unique for index in database.get_indexes(table)}
    # Peewee's introspection lists a plain table's indexes only; event is partitioned.
    rows = database.execute_sql(
        "SELECT ix.indisunique, array_agg(a.attname ORDER BY k.ord) "
        "FROM pg_class t JOIN pg_index ix ON ix.indrelid = t.oid "
        "CROSS JOIN LATERAL unnest(ix.indkey) WITH ORDINALITY AS k(attnum, ord) "
        "JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum "
        "WHERE t.relname = %s GROUP BY ix.indexrelid, ix.indisunique", (table,)).fetchall()
    return {tuple(columns): unique for unique, columns in rows}


def test_the_indexes_exist(upgraded):
    # What the analytics queries and idempotency rely on: site + time at least.
    for model, columns, unique in [
        (Event, ("site_id", "occurred_at"), False),
        (Event, ("site_id", "type", "occurred_at"), False),
        (ServerEvent, ("site_id", "occurred_at"), False),
        (ServerEvent, ("site_id", "order_id"), True),
    ]:
        indexes = _indexes(model._meta.table_name)
        assert indexes.get(columns) is unique, (model.__name__, columns, indexes)
    # And every index a model declares, with its uniqueness.
    for model in ALL_MODELS:
        indexes = _indexes(model._meta.table_name)
        for declared in model._meta.indexes:
            if isinstance(declared, ModelIndex):  # e.g. a partial index
                fields = tuple(field.column_name for field in declared._expressions)
                unique = declared._unique
            else:
                fields, unique = declared
            assert indexes.get(tuple(fields)) is unique, (model.__name__, fields, indexes)
        for field in model._meta.sorted_fields:
            if field.unique:
                assert indexes.get((field.column_name,)) is True, (model.__name__, field.name)


def test_json_properties_are_jsonb_on_postgresql(upgraded):
    types = {}
    for model in (Event, ServerEvent):
        for column in database.get_columns(model._meta.table_name):
            if column.name == "properties":
                types[model._meta.table_name] = column.data_type.lower()
    if is_postgres():
        assert types == {"event": "jsonb", "server_event": "jsonb"}
    else:
        assert types == {"event": "text", "server_event": "text"}


def test_json_round_trip(upgraded):
    from datetime import datetime

    properties = {"nested": {"list": [1, 2.5, "x", None, True]}, "unicode": "é😀"}
    Event.create(site_id=1, type="custom", properties=properties,
                 occurred_at=datetime(2026, 1, 1), received_at=datetime(2026, 1, 1))
    assert Event.get().properties == properties
    if is_postgres():  # really JSONB: the server can look inside it
        count = database.execute_sql(
            "SELECT count(*) FROM event WHERE properties -> 'nested' ->> 'list' IS NOT NULL"
        ).fetchone()[0]
        assert count == 1
