"""What PostgreSQL and SQLite spell differently: where the two databases part.

One class per database says it, PostgresDialect (app/storage/postgres.py) and SqliteDialect
(app/storage/sqlite.py); `current()` is the one of the database the models are bound to
(app.storage.db.init_app binds it), read from the handle on each call, so that it follows a
handle bound again (the tests do, between apps on different databases). Everything else builds
its statements from the functions here (and Peewee's own portable expressions) and asks the
capabilities that change a plan rather than a spelling by name (`has_grouping_sets`,
`reads_in_parallel`, `current().one_writer` ...), so no module outside app/storage asks which
database it runs on.
"""
import operator
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from peewee import (
    Case,
    ColumnBase,
    Expression,
    OperationalError,
    ProgrammingError,
    Select,
    fn,
)

from app.storage.db import is_postgres
from app.storage.postgres import PostgresDialect
from app.storage.sqlite import BUCKET_FORMATS, SqliteDialect, sqlite_regexp
from models import database

PG_QUERY_CANCELED = "57014"  # statement_timeout
POSTGRES = PostgresDialect()
SQLITE = SqliteDialect()
Dialect = PostgresDialect | SqliteDialect

__all__ = ["BUCKET_FORMATS", "POSTGRES", "SQLITE", "Dialect", "sqlite_regexp"]


def current() -> Dialect:
    """The dialect of the database the models are bound to."""
    return POSTGRES if is_postgres() else SQLITE


# --- Capabilities ----------------------------------------------------------------------------

def has_grouping_sets() -> bool:
    """GROUP BY GROUPING SETS (PostgreSQL); SQLite has none."""
    return current().has_grouping_sets


def reads_in_parallel() -> bool:
    """Whether a second connection may read beside the first: PostgreSQL's pool; SQLite (one
    file, one writer, small data) reads in turn."""
    return current().reads_in_parallel


def orders_visits_by_visitor() -> bool:
    """Whether an index holds each visitor's visits in time order (PostgreSQL's
    visit_first_visits), so that a read in that order needs no sort."""
    return current().orders_visits_by_visitor


# --- One read transaction --------------------------------------------------------------------

class QueryTimeoutError(Exception):
    """A read ran past its statement time limit and was stopped."""


class QueryShapeError(Exception):
    """A statement the database refused for its shape (nested too deep, too many terms or
    parameters), not because it is unavailable: the caller's query to simplify, not a reason to
    retry later."""


# PostgreSQL: SQLSTATE class 54, program_limit_exceeded (statement_too_complex: "stack depth
# limit exceeded", too many columns or arguments), and its parser's own stack ("memory
# exhausted", a syntax error). SQLite: the messages of its limits (SqliteDialect).
PG_PROGRAM_LIMIT_EXCEEDED = "54"
PG_SYNTAX_ERROR = "42601"


def is_query_shape_error(error: BaseException) -> bool:
    """Whether the database refused `error`'s statement for its shape (QueryShapeError)."""
    if isinstance(error, RecursionError):  # Peewee rendering an expression nested too deep
        return True
    code = getattr(getattr(error, "orig", None), "pgcode", None) or ""
    message = str(error).lower()
    if code:
        return code.startswith(PG_PROGRAM_LIMIT_EXCEEDED) or (
            code == PG_SYNTAX_ERROR and "memory exhausted" in message)
    return any(part in message for part in current().shape_error_messages)


@contextmanager
def read_transaction(timeout_seconds: float | None, snapshot: str | None = None
                     ) -> Iterator[None]:
    """A read-only transaction with a time limit, its statements on one snapshot (PostgreSQL:
    REPEATABLE READ; `snapshot`, one exported by `export_snapshot`, shares another's).

    On PostgreSQL it also gets enough memory for a million-row hash or sort to stay off disk
    and no JIT (compiling costs more than these queries run). Peewee has no spelling for SET,
    hence the statements. SQLite gets the REGEXP function (`sqlite_regexp`) and the time limit
    as a progress handler that interrupts a statement once the deadline has passed. A
    statement stopped by the limit raises QueryTimeoutError; one refused for its shape,
    QueryShapeError (is_query_shape_error)."""
    try:
        with database.atomic(), current().read_settings(timeout_seconds, snapshot):
            yield
    except (OperationalError, ProgrammingError, sqlite3.OperationalError, RecursionError
            ) as error:
        # sqlite3's own error: a statement interrupted while its rows are read, not executed
        code = getattr(getattr(error, "orig", None), "pgcode", None)
        if code == PG_QUERY_CANCELED or "interrupted" in str(error):
            raise QueryTimeoutError(str(error)) from None
        if is_query_shape_error(error):
            raise QueryShapeError(str(error) or type(error).__name__) from None
        raise


def export_snapshot() -> str:
    """The current transaction's snapshot, for a read transaction of another connection
    (PostgreSQL; `reads_in_parallel`)."""
    return database.execute_sql("SELECT pg_export_snapshot()").fetchone()[0]


# --- Conditions ------------------------------------------------------------------------------

def any_of(conditions: list[Any]) -> Any:
    """The conditions or-ed (at least one), as a balanced tree: see `all_of`."""
    return _balanced(conditions, operator.or_)


def all_of(conditions: list[Any]) -> Any:
    """The conditions and-ed (at least one), as a balanced tree. Peewee renders a chain
    `a | b | c` one parenthesis deeper per operand, ((a OR b) OR c), and SQLite's parser
    overflows its stack at 87 nested levels ("parser stack overflow": 99 or-ed filters did); a
    flat `a OR b OR ...` is one level of SQLite's expression tree per operand, which stops at
    1,000 ("Expression tree is too large"); Peewee itself recursed past Python's limit at ~500.
    Balanced, 1,000 conditions nest 10 levels deep and 30,000 15 (SQLite 3.40.1 accepted both).
    """
    return _balanced(conditions, operator.and_)


def _balanced(conditions: list[Any], join: Callable[[Any, Any], Any]) -> Any:
    if len(conditions) == 1:
        return conditions[0]
    middle = len(conditions) // 2
    return join(_balanced(conditions[:middle], join), _balanced(conditions[middle:], join))


# --- Text and JSON ---------------------------------------------------------------------------

def position(text: Any, needle: str) -> ColumnBase:
    """1-based position of `needle` in `text`, 0 when absent: a substring test without LIKE
    (whose `%` and `_` in a value would need escaping)."""
    return current().position(text, needle)


def json_text(column: Any, key: str) -> ColumnBase:
    """A JSON object's member `key` as text. SQLite addresses it as a quoted JSON path member;
    the key stays a bound parameter on both databases."""
    return current().json_text(column, key)


def json_number(column: Any, key: str) -> ColumnBase:
    """The member as a number; NULL when it is missing or not a JSON number (spelled as
    migration 0012's index spells it on PostgreSQL)."""
    return current().json_number(column, key)


def object_keys(source: Any, properties: Any, columns: list[Any]) -> Select:
    """A row (key, *columns) per member of each object `properties` of `source` (rows whose
    properties are no object give none): PostgreSQL's jsonb_object_keys, SQLite's json_each."""
    return current().object_keys(source, properties, columns)


def text_size(column: Any) -> ColumnBase:
    """Bytes of a JSON or text column as text (PostgreSQL; the partial indexes' measure)."""
    return fn.octet_length(column.cast("text"))


def in_partial_indexes(rows: Callable[[Any], Select], fits: Any, too_long: Any) -> Select:
    """`rows(condition)` read the way the partial indexes of PostgreSQL (migrations 0012,
    0013) hold them: the rows whose entry `fits` from the covering index, the few `too_long`
    for it from the other, as a UNION ALL of the two; the planner uses a partial index only
    when the query spells its condition. SQLite has no such indexes: all rows at once."""
    return current().in_partial_indexes(rows, fits, too_long)


def bytewise(column: Any) -> Any:
    """Order text by code point on both backends (SQLite's default), whatever the collation."""
    return current().bytewise(column)


def starts_with(column: Any, prefix: str) -> Expression:
    """`column` starts with `prefix`, as a byte range an index can read and the planner
    estimates from the column's statistics: PostgreSQL's text_pattern_ops operators (whatever
    the database's collation), SQLite's binary order."""
    after = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    return current().starts_with(column, prefix, after)


def _before_first(text: Any, stops: str) -> ColumnBase:
    """`text` up to the first of the characters in `stops` (all of it when none occurs)."""
    marker = stops[0]
    marked = text
    for stop in stops[1:]:
        marked = fn.replace(marked, stop, marker)
    return fn.substr(text, 1, position(marked.concat(marker), marker) - 1)


def url_path(url: Any) -> ColumnBase:
    """A URL's path ('/' when empty), as web vitals group their per-URL samples by page."""
    bare = _before_first(url, "?#")
    scheme_end = position(bare, "://")
    authority_on = fn.substr(bare, scheme_end + 3)
    path = Case(None, [(scheme_end > 0,
                        fn.substr(authority_on, position(authority_on.concat("/"), "/")))], bare)
    return fn.COALESCE(fn.NULLIF(path, ""), "/")


def earliest(source: Any, partition: Any, column: Any, where: Any, name: str) -> Any:
    """The CTE `name` of (partition, earliest): per value of `partition` among the rows of
    `source` (a model) that `where` selects, the least `column`: PostgreSQL's DISTINCT ON
    (off an index in that order), SQLite's GROUP BY with MIN."""
    return current().earliest(source, partition, column, where, name)


def firsts(rows: Select, partition: Any, order: list[Any], names: list[str], name: str
           ) -> tuple[list[Any], Any]:
    """(the CTEs it needs, the CTE `name`) of the first of `rows` (a select of the columns
    `names`) in each group of `partition`, by `order`: PostgreSQL's DISTINCT ON, SQLite's
    ROW_NUMBER."""
    return current().firsts(rows, partition, order, names, name)


# --- Numbers and time ------------------------------------------------------------------------

def wide(weight: Any) -> Any:
    """A weight (a REAL column) as double precision, for summing: PostgreSQL sums REAL as
    REAL, which stops counting at 2^24 (16.8 million: 17 million weights of 1 sum to
    16,777,216) and rounds every fractional weight it adds long before."""
    return weight.cast("DOUBLE PRECISION")


def seconds_between(first: Any, last: Any) -> ColumnBase:
    return current().seconds_between(first, last)


def hours_after(start: Any, hours: int) -> Any:
    return current().hours_after(start, hours)


def local_bucket(unit: str, column: Any, offset: Any) -> ColumnBase:
    """The hour, day, week (its Monday) or month of the naive UTC instant `column` moved by
    `offset` seconds (0, or an expression): truncated on PostgreSQL (the caller formats the few
    buckets after the grouping: to_char on each of 320,000 visits cost 90 ms), formatted as
    text (BUCKET_FORMATS) on SQLite."""
    return current().local_bucket(unit, column, offset)


def percentile_cont(fraction: float, value: Any, where: Any,
                    sqlite_aggregate: tuple[str, type]) -> ColumnBase:
    """percentile_cont(`fraction`) of `value` over the group's rows that match `where`:
    PostgreSQL's ordered-set aggregate; on SQLite, which has none, the aggregate class
    `sqlite_aggregate` (name, class with step and finalize) registered on the connection."""
    return current().percentile_cont(fraction, value, where, sqlite_aggregate)
