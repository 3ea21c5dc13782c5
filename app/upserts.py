"""What the tables kept up to date at ingest share (models.Visit, models.VisitPage,
models.EventSlot: app.visits, app.visit_pages, app.event_slots): the upsert that merges a
batch's rows into the stored ones, written once as SQL text that PostgreSQL (inside the store
statement of app.tracking.store) and SQLite (one statement per batch) both run.

In the merge rules `excluded` is the batch's row and the table's own name the stored row, as
in `INSERT ... ON CONFLICT DO UPDATE`; the rules are CASE expressions rather than GREATEST or
MAX(a, b), which the two databases spell differently.
"""
from collections.abc import Iterable
from typing import Any

from peewee import Model, Select

from app.db import is_postgres
from models import database


def summed(table: str, column: str) -> str:
    return f"{table}.{column} + excluded.{column}"


def chosen(table: str, column: str, at: str, wins: str) -> str:
    """The batch's `column` when its `at` is set and beats the stored one (`wins`: the
    comparison, e.g. '<' for the earlier); NULLs never win."""
    return (f"CASE WHEN excluded.{at} IS NOT NULL AND ({table}.{at} IS NULL OR "
            f"excluded.{at} {wins} {table}.{at}) THEN excluded.{column} "
            f"ELSE {table}.{column} END")


def extreme(table: str, column: str, wins: str) -> str:
    """The larger ('>') or smaller ('<') of the two, NULLs ignored."""
    return chosen(table, column, column, wins)


def upsert_sql(table: str, columns: tuple[str, ...], key: tuple[str, ...],
               rules: dict[str, str]) -> str:
    """INSERT of `columns` whose rows are `{rows}` (VALUES or a SELECT), merged into the row
    of the same `key` by `rules` (column: SQL expression)."""
    merge = ", ".join(f"{column} = {rule}" for column, rule in rules.items())
    return (f"INSERT INTO {table} ({', '.join(columns)}) {{rows}} "
            f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {merge}")


def add_rows(upsert: str, model: type[Model], columns: tuple[str, ...],
             rows: Iterable[dict[str, Any]]) -> None:
    """Merge rows into the table (inside the caller's transaction): one statement."""
    rows = list(rows)
    if not rows:
        return
    row_marks = "(" + ", ".join([database.param] * len(columns)) + ")"
    fields = [model._meta.fields[column] for column in columns]
    database.execute_sql(
        upsert.format(rows="VALUES " + ", ".join([row_marks] * len(rows))),
        [field.db_value(row[field.name]) for row in rows for field in fields])


def replace_rows(model: type[Model], columns: tuple[str, ...], where: Any, rows: Select,
                 everything: bool) -> None:
    """Replace the table's rows matching `where` by `rows` (a SELECT of `columns`), inside the
    caller's transaction; `everything`: every row of the table, emptied with TRUNCATE on
    PostgreSQL, where a DELETE of every row would leave them all dead."""
    if everything and is_postgres():
        model.truncate_table()
    else:
        model.delete().where(where).execute()
    model.insert_from(rows, [model._meta.fields[column] for column in columns]).execute()
