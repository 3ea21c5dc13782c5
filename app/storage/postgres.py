"""PostgreSQL's spelling of what the two databases say differently (app.storage.dialect picks
it), its locks and its reads of the server's own state (the id sequence, pg_locks, xmin)."""
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
    Select,
    Value,
    fn,
)

from models import database

WORK_MEM = "256MB"  # a 300,000-visit hash aggregate with its sums stays in memory
LOCK_NOT_AVAILABLE = "55P03"  # lock_not_available: lock_timeout ran out


def _json_member(column: Any, key: str, operator: str) -> Expression:
    # The ->/->> operators: cheaper than jsonb_extract_path (no variadic array per row).
    # coerce(False) keeps Peewee from passing `key` through the JSON field's db_value.
    return Expression(column.coerce(False), operator, key)


class PostgresDialect:
    has_grouping_sets = True
    reads_in_parallel = True  # the pool: a second connection reads beside the first
    # the index visit_first_visits (migrations 0019, 0022): each visitor's visits in order
    orders_visits_by_visitor = True
    one_writer = False  # ids drawn from a sequence, committed in any order
    partitions_events = True  # the event table's monthly partitions (app.storage.partitions)
    empties_by_truncate = True  # a DELETE of every row would leave them all dead
    prepares_statements = True  # the ingest statement, once per pooled connection
    groups_commits = True  # a commit waits for the WAL flush: the group writer shares one
    # INSERT ... ON CONFLICT DO NOTHING RETURNING: a concurrent copy waits for the other's
    # commit, then does nothing
    inserts_once_by_conflict = True
    shape_error_messages: tuple[str, ...] = ()  # its SQLSTATE says so (dialect.py)

    @contextmanager
    def read_settings(self, timeout_seconds: float | None, snapshot: str | None
                      ) -> Iterator[None]:
        database.execute_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        if snapshot is not None:
            database.execute_sql("SET TRANSACTION SNAPSHOT %s", (snapshot,))
        database.execute_sql(f"SET LOCAL work_mem = '{WORK_MEM}'")
        database.execute_sql("SET LOCAL jit = off")
        if timeout_seconds:
            milliseconds = max(1, int(timeout_seconds * 1000))
            database.execute_sql(f"SET LOCAL statement_timeout = {milliseconds}")
        yield

    def no_statement_timeout(self) -> None:
        """No time limit for the rest of the transaction (an upgrade's backfill)."""
        database.execute_sql("SET LOCAL statement_timeout = 0")

    def streaming_cursor(self) -> Any:
        """A cursor that fetches its rows as they are asked for (a server-side cursor; WITH
        HOLD, as the pool's connections run in autocommit between Peewee's transactions)."""
        return database.connection().cursor(name="egis_stream", withhold=True)

    # --- Locks -----------------------------------------------------------------------------

    @contextmanager
    def held_for_session(self, lock_id: int) -> Iterator[None]:
        """The advisory lock `lock_id` for the block, waited for as long as it takes."""
        database.execute_sql("SELECT pg_advisory_lock(%s)", (lock_id,))
        try:
            yield
        finally:
            database.execute_sql("SELECT pg_advisory_unlock(%s)", (lock_id,))

    @contextmanager
    def one_transaction_at_a_time(self, lock_id: int) -> Iterator[None]:
        """A transaction for the block that no other holding `lock_id` runs beside."""
        with database.atomic():
            database.execute_sql("SELECT pg_advisory_xact_lock(%s)", (lock_id,))
            yield

    @contextmanager
    def tried(self, lock_id: int, deadline: float | None) -> Iterator[bool]:
        """The advisory lock `lock_id` for the block (True), or False when another held it past
        `deadline` (a time.monotonic() instant; None: as long as it takes)."""
        if not self._advisory_lock(lock_id, deadline):
            yield False
            return
        try:
            yield True
        finally:
            database.execute_sql("SELECT pg_advisory_unlock(%s)", (lock_id,))

    def _advisory_lock(self, lock_id: int, deadline: float | None) -> bool:
        """Waited for in the server until `deadline` (lock_timeout: no polling round trips)."""
        if deadline is None:
            database.execute_sql("SELECT pg_advisory_lock(%s)", (lock_id,))
            return True
        waited = int((deadline - monotonic()) * 1000)
        if waited < 1:
            return database.execute_sql("SELECT pg_try_advisory_lock(%s)",
                                        (lock_id,)).fetchone()[0]
        try:
            database.execute_sql(f"SET lock_timeout = {waited}; SELECT pg_advisory_lock(%s)",
                                 (lock_id,))
        except OperationalError as error:
            if getattr(getattr(error, "orig", None), "pgcode", None) != LOCK_NOT_AVAILABLE:
                raise
            return False
        finally:
            database.execute_sql("RESET lock_timeout")
        return True

    # --- The rollups' mark: which event ids are final (app.rollups.mark) ---------------------

    def last_drawn_event_id(self) -> int:
        """The event id sequence's last value (ids of rolled back inserts too), read without
        touching the event table's partitions."""
        return database.execute_sql(
            "SELECT COALESCE(pg_sequence_last_value(pg_get_serial_sequence('event', 'id')"
            "::regclass), 0)").fetchone()[0]

    def inserting_event_transactions(self) -> set[str]:
        """The other transactions that hold ROW EXCLUSIVE on this database's event table now.
        pg_locks lists the whole server's locks, by relation OID, and a database copied with
        CREATE DATABASE ... TEMPLATE has the same OIDs: its inserts are not this one's."""
        return {vxid for (vxid,) in database.execute_sql(
            "SELECT virtualtransaction FROM pg_locks WHERE locktype = 'relation' "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "AND relation = 'event'::regclass AND mode = 'RowExclusiveLock' AND granted "
            "AND pid <> pg_backend_pid()").fetchall()}

    def first_event_id_crossing(self, after: int, through: int) -> int | None:
        """The smallest id in (after, through] of a transaction (the rows' xmin) that also
        inserted ids past `through`; None when none crosses."""
        (first,) = database.execute_sql(
            "SELECT min(id) FROM event WHERE id > %s AND id <= %s "
            "AND xmin IN (SELECT xmin FROM event WHERE id > %s)",
            (after, through, through)).fetchone()
        return first

    # --- Spellings ---------------------------------------------------------------------------

    def position(self, text: Any, needle: str) -> ColumnBase:
        return fn.strpos(text, needle)

    def json_text(self, column: Any, key: str) -> ColumnBase:
        return _json_member(column, key, "->>")

    def json_number(self, column: Any, key: str) -> ColumnBase:
        is_number = fn.jsonb_typeof(_json_member(column, key, "->")) == "number"
        value = _json_member(column, key, "->>").cast("double precision")
        return Case(None, [(is_number, value)])

    def object_keys(self, source: Any, properties: Any, columns: list[Any]) -> Select:
        # The set-returning function is in the select list, not in FROM, where it fills a
        # tuplestore per row: describe_data's key count took 41 rather than 64 ms for 64,000
        # events.
        keys = fn.jsonb_object_keys(Case(None, [
            (fn.jsonb_typeof(properties) == "object", properties)]))
        return Select([source], [keys.alias("key"), *columns])

    def earliest(self, source: Any, partition: Any, column: Any, where: Any, name: str
                 ) -> Any:
        # DISTINCT ON reads an index on (partition, column) in order, one row kept per group:
        # every visitor's first visit at 10 M events took 0.3 s, GROUP BY with MIN 0.9 s
        return (source.select(partition.alias("partition"), column.alias("earliest"))
                .where(where).distinct(partition).order_by(partition, column).cte(name))

    def firsts(self, rows: Select, partition: Any, order: list[Any], names: list[str],
               name: str) -> tuple[list[Any], Any]:
        # DISTINCT ON reads an index in (partition, order) order and keeps each group's first:
        # the first visits of 984,000 took 1.2 s where ROW_NUMBER took 2.3 (10 M events)
        return [], rows.distinct(partition).order_by(partition, *order).cte(name)

    def in_partial_indexes(self, rows: Callable[[Any], Select], fits: Any, too_long: Any
                           ) -> Select:
        return rows(fits) + rows(too_long)

    def bytewise(self, column: Any) -> Any:
        return column.collate('"C"')

    def starts_with(self, column: Any, prefix: str, after: str) -> Expression:
        return Expression(column, "~>=~", prefix) & Expression(column, "~<~", after)

    def seconds_between(self, first: Any, last: Any) -> ColumnBase:
        return fn.date_part("epoch", last - first)

    def at_least_a_day_between(self, first: str, last: str) -> str:
        return f"{last} - {first} >= interval '1 day'"

    def hours_after(self, start: Any, hours: int) -> Any:
        return start + Value(timedelta(hours=hours))

    def quarter_hour(self, column: Any) -> Any:
        return fn.date_bin(SQL("interval '15 minutes'"), column, SQL("timestamp '2000-01-01'"))

    def local_bucket(self, unit: str, column: Any, offset: Any) -> ColumnBase:
        local = column if isinstance(offset, int) and offset == 0 else column + offset * SQL(
            "interval '1 second'")
        return fn.date_trunc(unit, local)

    def percentile_cont(self, fraction: float, value: Any, where: Any,
                        sqlite_aggregate: tuple[str, type]) -> ColumnBase:
        ordered = EnclosedNodeList([NodeList((SQL("ORDER BY"), value))])
        only = EnclosedNodeList([NodeList((SQL("WHERE"), where))])
        return NodeList((fn.percentile_cont(fraction), SQL("WITHIN GROUP"), ordered,
                         SQL("FILTER"), only))
