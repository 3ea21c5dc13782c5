"""Monthly partitions of the event table, on PostgreSQL (SQLite keeps one table).

The partition key is `occurred_at`, the time every analytics query filters on, so a query for a
period reads only that period's partitions. A DEFAULT partition takes whatever no month has a
partition for (an event up to 400 days old, the oldest ingest takes; migrated history), so no
insert can ever fail for want of a partition. Months are created ahead of time, this one and
AHEAD_MONTHS more, by `flask db upgrade`, `flask db partitions` and `flask data prune`; a month
whose rows already sit in the DEFAULT partition (migrated history, a clock a few months ahead)
gets its partition when it falls within BACK_MONTHS before this one, and its rows move there.
Retention drops whole months (`drop_months_before`) instead of deleting their rows.

DDL here takes at most a brief lock of the event table, waiting no longer than LOCK_TIMEOUT and
retried: a long analytics query never makes ingest queue behind a waiting DROP.
"""
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from peewee import OperationalError

from app.storage.db import is_postgres
from models import database
from models.site import utcnow

log = logging.getLogger(__name__)

AHEAD_MONTHS = 3
BACK_MONTHS = 24
DEFAULT_PARTITION = "event_default"
LOCK_ID = 0x6567_6970  # one partition maintainer at a time per PostgreSQL server
LOCK_TIMEOUT = "1s"
DDL_ATTEMPTS = 5
LOCK_NOT_AVAILABLE = "55P03"
MONTHLY = re.compile(r"event_(\d{4})_(\d{2})")
T = TypeVar("T")


def month_start(moment: datetime, months_later: int = 0) -> datetime:
    """The first instant of the calendar month `months_later` months after `moment`'s."""
    index = moment.year * 12 + moment.month - 1 + months_later
    return datetime(index // 12, index % 12 + 1, 1)


@dataclass(frozen=True, order=True)
class Month:
    start: datetime

    @property
    def end(self) -> datetime:
        return month_start(self.start, 1)

    @property
    def name(self) -> str:
        return f"event_{self.start:%Y_%m}"


def monthly_partitions() -> list[Month]:
    """The event table's monthly partitions, oldest first (none on SQLite)."""
    if not is_postgres():
        return []
    rows = database.execute_sql(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = 'event'::regclass").fetchall()
    months = [MONTHLY.fullmatch(name) for (name,) in rows]
    return sorted(Month(datetime(int(m[1]), int(m[2]), 1)) for m in months if m)


def _months_waiting_in_default(first: datetime, end: datetime) -> list[Month]:
    rows = database.execute_sql(
        f"SELECT DISTINCT date_trunc('month', occurred_at) FROM {DEFAULT_PARTITION} "
        "WHERE occurred_at >= %s AND occurred_at < %s", (first, end)).fetchall()
    return [Month(start) for (start,) in rows]


def ensure(now: datetime | None = None) -> list[str]:
    """Create the partitions that should exist; returns the names created (idempotent)."""
    if not is_postgres():
        return []
    this_month = month_start(now or utcnow())
    wanted = {Month(month_start(this_month, ahead)) for ahead in range(AHEAD_MONTHS + 1)}
    wanted |= set(_months_waiting_in_default(month_start(this_month, -BACK_MONTHS),
                                             month_start(this_month, AHEAD_MONTHS + 1)))
    missing = sorted(wanted - set(monthly_partitions()))
    return [month.name for month in missing if _with_short_locks(_create, month)]


def _create(month: Month) -> bool:
    """Create `month`'s partition, moving its rows out of the DEFAULT partition. A table built
    first and then attached only takes a lock that ingest does not wait on."""
    if month in monthly_partitions():  # another maintainer was first
        return False
    name, start, end = month.name, month.start, month.end
    database.execute_sql(f"CREATE TABLE {name} (LIKE event INCLUDING DEFAULTS)")
    # The range as a constraint: attaching does not have to scan the new table to prove it.
    database.execute_sql(f"ALTER TABLE {name} ADD CONSTRAINT {name}_range "
                         "CHECK (occurred_at >= %s AND occurred_at < %s)", (start, end))
    database.execute_sql(
        f"WITH moved AS (DELETE FROM {DEFAULT_PARTITION} WHERE occurred_at >= %s "
        f"AND occurred_at < %s RETURNING *) INSERT INTO {name} SELECT * FROM moved",
        (start, end))
    database.execute_sql(f"ALTER TABLE event ATTACH PARTITION {name} "
                         "FOR VALUES FROM (%s) TO (%s)", (start, end))
    database.execute_sql(f"ALTER TABLE {name} DROP CONSTRAINT {name}_range")
    log.info("created partition %s", name)
    return True


def drop_months_before(cutoff: datetime) -> dict[str, int]:
    """Drop every monthly partition that ends at or before `cutoff`; rows per dropped one."""
    dropped: dict[str, int] = {}
    for month in monthly_partitions():
        if month.end <= cutoff:
            rows = _with_short_locks(_drop, month)
            if rows is not None:
                dropped[month.name] = rows
    return dropped


def _drop(month: Month) -> int | None:
    if month not in monthly_partitions():
        return None
    (rows,) = database.execute_sql(f"SELECT count(*) FROM {month.name}").fetchone()
    database.execute_sql(f"DROP TABLE {month.name}")
    log.info("dropped partition %s (%d rows)", month.name, rows)
    return rows


def _with_short_locks(ddl: Callable[[Month], T], month: Month) -> T | None:
    """Run `ddl(month)` in a transaction that waits at most LOCK_TIMEOUT for a lock; retried
    with a growing pause when it could not get one."""
    for attempt in range(1, DDL_ATTEMPTS + 1):
        try:
            with database.atomic():
                database.execute_sql("SELECT pg_advisory_xact_lock(%s)", (LOCK_ID,))
                database.execute_sql(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
                # Moving a month of history out of the DEFAULT partition may take a while.
                database.execute_sql("SET LOCAL statement_timeout = 0")
                return ddl(month)
        except OperationalError as error:
            code = getattr(getattr(error, "orig", None), "pgcode", None)
            if code != LOCK_NOT_AVAILABLE or attempt == DDL_ATTEMPTS:
                raise
            log.warning("partition %s: the event table is busy; retrying", month.name)
            time.sleep(0.5 * attempt)
    return None
