"""What PostgreSQL and SQLite spell differently: the one module where the two databases part.

Everything else builds its statements from the functions here (and Peewee's own portable
expressions), so no module of the read side asks which database it runs on. Capabilities that
change a plan rather than a spelling (GROUPING SETS, reads on a second connection) are asked
here too, by name (`has_grouping_sets`, `reads_in_parallel`).
"""
import operator
import re
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from time import monotonic
from typing import Any

from peewee import (
    SQL,
    Case,
    ColumnBase,
    EnclosedNodeList,
    Expression,
    NodeList,
    OperationalError,
    ProgrammingError,
    Select,
    Value,
    fn,
)

from app.storage.db import is_postgres
from models import database

PG_QUERY_CANCELED = "57014"  # statement_timeout
SQLITE_PROGRESS_STEPS = 10_000  # SQLite VM instructions between deadline checks
WORK_MEM = "256MB"  # a 300,000-visit hash aggregate with its sums stays in memory
SQLITE_REGEXP = "regexp"


# --- Capabilities ----------------------------------------------------------------------------

def has_grouping_sets() -> bool:
    """GROUP BY GROUPING SETS (PostgreSQL); SQLite has none."""
    return is_postgres()


def reads_in_parallel() -> bool:
    """Whether a second connection may read beside the first: PostgreSQL's pool; SQLite (one
    file, one writer, small data) reads in turn."""
    return is_postgres()


# --- One read transaction --------------------------------------------------------------------

class QueryTimeoutError(Exception):
    """A read ran past its statement time limit and was stopped."""


class QueryShapeError(Exception):
    """A statement the database refused for its shape (nested too deep, too many terms or
    parameters), not because it is unavailable: the caller's query to simplify, not a reason to
    retry later."""


# PostgreSQL: SQLSTATE class 54, program_limit_exceeded (statement_too_complex: "stack depth
# limit exceeded", too many columns or arguments), and its parser's own stack ("memory
# exhausted", a syntax error). SQLite: the messages of its limits (sqlite3_limit) and parser.
PG_PROGRAM_LIMIT_EXCEEDED = "54"
PG_SYNTAX_ERROR = "42601"
SQLITE_SHAPE_ERRORS = ("parser stack overflow", "expression tree is too large", "too many ",
                       "at most ", "pattern too complex")


def is_query_shape_error(error: BaseException) -> bool:
    """Whether the database refused `error`'s statement for its shape (QueryShapeError)."""
    if isinstance(error, RecursionError):  # Peewee rendering an expression nested too deep
        return True
    code = getattr(getattr(error, "orig", None), "pgcode", None) or ""
    message = str(error).lower()
    if code:
        return code.startswith(PG_PROGRAM_LIMIT_EXCEEDED) or (
            code == PG_SYNTAX_ERROR and "memory exhausted" in message)
    return not is_postgres() and any(part in message for part in SQLITE_SHAPE_ERRORS)


def sqlite_regexp(regex: str, value: Any) -> bool:
    """SQLite's `value REGEXP regex` (SQLite has the operator but no function behind it)."""
    return value is not None and re.search(regex, str(value)) is not None


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
        with database.atomic():
            if is_postgres():
                database.execute_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                if snapshot is not None:
                    database.execute_sql("SET TRANSACTION SNAPSHOT %s", (snapshot,))
                database.execute_sql(f"SET LOCAL work_mem = '{WORK_MEM}'")
                database.execute_sql("SET LOCAL jit = off")
                if timeout_seconds:
                    milliseconds = max(1, int(timeout_seconds * 1000))
                    database.execute_sql(f"SET LOCAL statement_timeout = {milliseconds}")
                yield
                return
            database.obj.register_function(sqlite_regexp, SQLITE_REGEXP, 2, deterministic=True)
            connection = database.connection()
            if timeout_seconds:
                deadline = monotonic() + timeout_seconds
                connection.set_progress_handler(lambda: int(monotonic() > deadline),
                                                SQLITE_PROGRESS_STEPS)
            try:
                yield
            finally:
                connection.set_progress_handler(None, 0)
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
    return fn.strpos(text, needle) if is_postgres() else fn.instr(text, needle)


def _json_member(column: Any, key: str, operator: str) -> Expression:
    # The ->/->> operators: cheaper than jsonb_extract_path (no variadic array per row).
    # coerce(False) keeps Peewee from passing `key` through the JSON field's db_value.
    return Expression(column.coerce(False), operator, key)


def json_text(column: Any, key: str) -> ColumnBase:
    """A JSON object's member `key` as text. SQLite addresses it as a quoted JSON path member;
    the key stays a bound parameter on both databases."""
    if is_postgres():
        return _json_member(column, key, "->>")
    return fn.json_extract(column, f'$."{key}"').coerce(False).cast("TEXT")


def json_number(column: Any, key: str) -> ColumnBase:
    """The member as a number; NULL when it is missing or not a JSON number (spelled as
    migration 0012's index spells it on PostgreSQL)."""
    if is_postgres():
        is_number = fn.jsonb_typeof(_json_member(column, key, "->")) == "number"
        value = _json_member(column, key, "->>").cast("double precision")
    else:
        is_number = fn.json_type(column, f"$.{key}").in_(("integer", "real"))
        value = fn.json_extract(column, f"$.{key}").coerce(False)
    return Case(None, [(is_number, value)])


def object_keys(source: Any, properties: Any, columns: list[Any]) -> Select:
    """A row (key, *columns) per member of each object `properties` of `source` (rows whose
    properties are no object give none): PostgreSQL's jsonb_object_keys, SQLite's json_each.

    On PostgreSQL the set-returning function is in the select list, not in FROM, where it
    fills a tuplestore per row: describe_data's key count took 41 rather than 64 ms for 64,000
    events."""
    if is_postgres():
        keys = fn.jsonb_object_keys(Case(None, [
            (fn.jsonb_typeof(properties) == "object", properties)]))
        return Select([source], [keys.alias("key"), *columns])
    member = fn.json_each(properties).alias("member")
    return (Select([source, member], [SQL('"member"."key"').alias("key"), *columns])
            .where(fn.json_type(properties) == "object"))


def text_size(column: Any) -> ColumnBase:
    """Bytes of a JSON or text column as text (PostgreSQL; the partial indexes' measure)."""
    return fn.octet_length(column.cast("text"))


def in_partial_indexes(rows: Callable[[Any], Select], fits: Any, too_long: Any) -> Select:
    """`rows(condition)` read the way the partial indexes of PostgreSQL (migrations 0012,
    0013) hold them: the rows whose entry `fits` from the covering index, the few `too_long`
    for it from the other, as a UNION ALL of the two; the planner uses a partial index only
    when the query spells its condition. SQLite has no such indexes: all rows at once."""
    if not is_postgres():
        return rows(True)
    return rows(fits) + rows(too_long)


def bytewise(column: Any) -> Any:
    """Order text by code point on both backends (SQLite's default), whatever the collation."""
    return column.collate('"C"') if is_postgres() else column


def starts_with(column: Any, prefix: str) -> Expression:
    """`column` starts with `prefix`, as a byte range an index can read and the planner
    estimates from the column's statistics: PostgreSQL's text_pattern_ops operators (whatever
    the database's collation), SQLite's binary order."""
    after = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    if is_postgres():
        return Expression(column, "~>=~", prefix) & Expression(column, "~<~", after)
    return (column >= prefix) & (column < after)


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


# --- Numbers and time ------------------------------------------------------------------------

def wide(weight: Any) -> Any:
    """A weight (a REAL column) as double precision, for summing: PostgreSQL sums REAL as
    REAL, which stops counting at 2^24 (16.8 million: 17 million weights of 1 sum to
    16,777,216) and rounds every fractional weight it adds long before."""
    return weight.cast("DOUBLE PRECISION")


def seconds_between(first: Any, last: Any) -> ColumnBase:
    if is_postgres():
        return fn.date_part("epoch", last - first)
    return (fn.julianday(last) - fn.julianday(first)) * 86400


def hours_after(start: Any, hours: int) -> Any:
    if is_postgres():
        return start + Value(timedelta(hours=hours))
    # occurred_at is ISO text on SQLite; %f keeps the milliseconds.
    return fn.strftime("%Y-%m-%d %H:%M:%f", start, f"+{hours} hours")


BUCKET_FORMATS = {"hour": "%Y-%m-%dT%H:00", "day": "%Y-%m-%d", "week": "%Y-%m-%d",
                  "month": "%Y-%m"}


def local_bucket(unit: str, column: Any, offset: Any) -> ColumnBase:
    """The hour, day, week (its Monday) or month of the naive UTC instant `column` moved by
    `offset` seconds (0, or an expression): truncated on PostgreSQL (the caller formats the few
    buckets after the grouping: to_char on each of 320,000 visits cost 90 ms), formatted as
    text (BUCKET_FORMATS) on SQLite."""
    if is_postgres():
        local = column if isinstance(offset, int) and offset == 0 else column + offset * SQL(
            "interval '1 second'")
        return fn.date_trunc(unit, local)
    modifier = fn.printf("%+d seconds", offset)
    # whole seconds: SQLite's date functions round to milliseconds, which would move
    # 23:59:59.9999 into the next day; the offsets are whole seconds, so flooring is exact
    seconds = fn.substr(column, 1, len("YYYY-MM-DD HH:MM:SS"))
    if unit == "week":
        return fn.date(seconds, modifier, "-6 days", "weekday 1")
    return fn.strftime(BUCKET_FORMATS[unit], seconds, modifier)


def percentile_cont(fraction: float, value: Any, where: Any,
                    sqlite_aggregate: tuple[str, type]) -> ColumnBase:
    """percentile_cont(`fraction`) of `value` over the group's rows that match `where`:
    PostgreSQL's ordered-set aggregate; on SQLite, which has none, the aggregate class
    `sqlite_aggregate` (name, class with step and finalize) registered on the connection."""
    if not is_postgres():
        name, aggregate = sqlite_aggregate
        database.obj.register_aggregate(aggregate, name, 1)
        return getattr(fn, name)(value).filter(where)
    ordered = EnclosedNodeList([NodeList((SQL("ORDER BY"), value))])
    only = EnclosedNodeList([NodeList((SQL("WHERE"), where))])
    return NodeList((fn.percentile_cont(fraction), SQL("WITHIN GROUP"), ordered,
                     SQL("FILTER"), only))
