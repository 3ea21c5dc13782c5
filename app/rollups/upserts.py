"""What the rollups share (models.Visit, models.VisitPage, models.EventSlot: visits,
visit_pages, event_slots): the upsert that merges the rows of newly stored events into the
stored ones (merging), written once as SQL text that PostgreSQL and SQLite both run, and
the replacement of rows that a rebuild derives anew.

In the merge rules `excluded` is the new events' row and the table's own name the stored row, as
in `INSERT ... ON CONFLICT DO UPDATE`; the rules are CASE expressions rather than GREATEST or
MAX(a, b), which the two databases spell differently.
"""
from typing import Any

from peewee import Model, Select

from app.storage.dialect import current


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


def replace_rows(model: type[Model], columns: tuple[str, ...], where: Any, rows: Select,
                 everything: bool) -> None:
    """Replace the table's rows matching `where` by `rows` (a SELECT of `columns`), inside the
    caller's transaction; `everything`: every row of the table, emptied with TRUNCATE on
    PostgreSQL, where a DELETE of every row would leave them all dead."""
    if everything and current().empties_by_truncate:
        model.truncate_table()
    else:
        model.delete().where(where).execute()
    model.insert_from(rows, [model._meta.fields[column] for column in columns]).execute()
