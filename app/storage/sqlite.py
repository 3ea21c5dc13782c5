"""SQLite's spelling of what the two databases say differently (app.storage.dialect picks it),
and its one lock: the write lock of an IMMEDIATE transaction."""
import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from time import monotonic
from typing import Any

from peewee import SQL, Case, ColumnBase, Expression, OperationalError, Select, fn

from app.storage.db import SQLITE_BUSY_MILLISECONDS
from models import database

SQLITE_PROGRESS_STEPS = 10_000  # SQLite VM instructions between deadline checks
SQLITE_REGEXP = "regexp"
BUCKET_FORMATS = {"minute": "%Y-%m-%dT%H:%M", "hour": "%Y-%m-%dT%H:00", "day": "%Y-%m-%d",
                  "week": "%Y-%m-%d", "month": "%Y-%m"}


def sqlite_regexp(regex: str, value: Any) -> bool:
    """SQLite's `value REGEXP regex` (SQLite has the operator but no function behind it)."""
    return value is not None and re.search(regex, str(value)) is not None


class SqliteDialect:
    has_grouping_sets = False
    reads_in_parallel = False  # one file, one writer, small data: reads in turn
    orders_visits_by_visitor = False  # no index of each visitor's visits: it would sort them
    # Every committed id is final within the write lock, and a new row gets the largest id
    # left plus one.
    one_writer = True
    partitions_events = False
    empties_by_truncate = False
    prepares_statements = False
    groups_commits = False
    inserts_once_by_conflict = False  # a savepoint and the IntegrityError instead
    # the messages of its limits (sqlite3_limit) and parser
    shape_error_messages = ("parser stack overflow", "expression tree is too large", "too many ",
                            "at most ", "pattern too complex")

    @contextmanager
    def read_settings(self, timeout_seconds: float | None, snapshot: str | None
                      ) -> Iterator[None]:
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

    def no_statement_timeout(self) -> None:
        """SQLite has no statement timeout."""

    def streaming_cursor(self) -> Any:
        """A cursor: SQLite's steps through its rows as they are fetched."""
        return database.cursor()

    # --- Locks: one file, one writer -------------------------------------------------------

    def held_for_session(self, lock_id: int) -> Any:
        """Nothing: one file, used by the one host that runs egis."""
        return nullcontext()

    def one_transaction_at_a_time(self, lock_id: int) -> Any:
        return database.atomic(lock_type="IMMEDIATE")

    @contextmanager
    def tried(self, lock_id: int, deadline: float | None) -> Iterator[bool]:
        """An IMMEDIATE transaction for the block (True), or False when another writer held
        the lock past `deadline` (None: app.storage.db's busy timeout)."""
        with ExitStack() as transaction:
            if deadline is not None:
                waited = max(0, int((deadline - monotonic()) * 1000))
                database.execute_sql(f"PRAGMA busy_timeout = {waited}")
            try:
                transaction.enter_context(database.atomic(lock_type="IMMEDIATE"))
            except OperationalError as error:
                if "locked" not in str(error):
                    raise
                held = False
            else:
                held = True
            finally:
                if deadline is not None:
                    database.execute_sql(f"PRAGMA busy_timeout = {SQLITE_BUSY_MILLISECONDS}")
            yield held

    # --- Spellings ---------------------------------------------------------------------------

    def position(self, text: Any, needle: str) -> ColumnBase:
        return fn.instr(text, needle)

    def json_text(self, column: Any, key: str) -> ColumnBase:
        # a quoted JSON path member; the key stays a bound parameter
        return fn.json_extract(column, f'$."{key}"').coerce(False).cast("TEXT")

    def json_number(self, column: Any, key: str) -> ColumnBase:
        is_number = fn.json_type(column, f"$.{key}").in_(("integer", "real"))
        value = fn.json_extract(column, f"$.{key}").coerce(False)
        return Case(None, [(is_number, value)])

    def object_keys(self, source: Any, properties: Any, columns: list[Any]) -> Select:
        member = fn.json_each(properties).alias("member")
        return (Select([source, member], [SQL('"member"."key"').alias("key"), *columns])
                .where(fn.json_type(properties) == "object"))

    def earliest(self, source: Any, partition: Any, column: Any, where: Any, name: str
                 ) -> Any:
        # no DISTINCT ON; MIN in one grouping pass (a weekly retention at 1 M events: 0.30 s
        # of statements, 0.43 s with the ROW_NUMBER of `firsts`)
        return (source.select(partition.alias("partition"), fn.MIN(column).alias("earliest"))
                .where(where).group_by(partition).cte(name))

    def firsts(self, rows: Select, partition: Any, order: list[Any], names: list[str],
               name: str) -> tuple[list[Any], Any]:
        # no DISTINCT ON: each group's rows numbered, the first kept
        ranked = rows.select_extend(fn.ROW_NUMBER().over(partition_by=[partition],
                                                         order_by=order).alias("rank")
                                    ).cte(f"{name}_ranked")
        return [ranked], Select([ranked], [getattr(ranked.c, column) for column in names]
                                ).where(ranked.c.rank == 1).cte(name)

    def in_partial_indexes(self, rows: Callable[[Any], Select], fits: Any, too_long: Any
                           ) -> Select:
        return rows(True)  # no such indexes: all rows at once

    def bytewise(self, column: Any) -> Any:
        return column  # its default order

    def starts_with(self, column: Any, prefix: str, after: str) -> Expression:
        return (column >= prefix) & (column < after)

    def seconds_between(self, first: Any, last: Any) -> ColumnBase:
        return (fn.julianday(last) - fn.julianday(first)) * 86400

    def at_least_a_day_between(self, first: str, last: str) -> str:
        return f"julianday({last}) - julianday({first}) >= 1"

    def hours_after(self, start: Any, hours: int) -> Any:
        # occurred_at is ISO text on SQLite; %f keeps the milliseconds.
        return fn.strftime("%Y-%m-%d %H:%M:%f", start, f"+{hours} hours")

    def quarter_hour(self, column: Any) -> Any:
        minutes = (fn.strftime("%M", column).cast("INTEGER") / 15) * 15
        return fn.strftime("%Y-%m-%d %H:", column).concat(fn.printf("%02d", minutes)).concat(
            ":00")

    def local_bucket(self, unit: str, column: Any, offset: Any) -> ColumnBase:
        modifier = fn.printf("%+d seconds", offset)
        # whole seconds: SQLite's date functions round to milliseconds, which would move
        # 23:59:59.9999 into the next day; the offsets are whole seconds, so flooring is exact
        seconds = fn.substr(column, 1, len("YYYY-MM-DD HH:MM:SS"))
        if unit == "week":
            return fn.date(seconds, modifier, "-6 days", "weekday 1")
        return fn.strftime(BUCKET_FORMATS[unit], seconds, modifier)

    def percentile_cont(self, fraction: float, value: Any, where: Any,
                        sqlite_aggregate: tuple[str, type]) -> ColumnBase:
        name, aggregate = sqlite_aggregate
        database.obj.register_aggregate(aggregate, name, 1)
        return getattr(fn, name)(value).filter(where)
