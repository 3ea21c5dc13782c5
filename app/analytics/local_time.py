"""Local time in SQL: the site's days, weeks and months as buckets of the naive UTC instants the
tables hold, without the databases' time zone functions (SQLite has none)."""
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from peewee import Case, ColumnBase

from app.analytics.period import Period
from app.storage.dialect import BUCKET_FORMATS, local_bucket


def offset_changes(zone: ZoneInfo, start: datetime, end: datetime) -> list[tuple[datetime, int]]:
    """[(from UTC instant, UTC offset in seconds)] covering [start, end): where the zone's
    offset changes (DST), found hour by hour and then to the minute."""

    def offset(instant: datetime) -> int:
        local = instant.replace(tzinfo=UTC).astimezone(zone)
        return int(local.utcoffset().total_seconds())  # type: ignore[union-attr]

    changes = [(start, offset(start))]
    hour = timedelta(hours=1)
    moment = start
    while moment < end:
        following = moment + hour
        if offset(following) != changes[-1][1]:
            low, high = moment, following  # offset(low) is the old one, offset(high) the new
            while high - low > timedelta(minutes=1):
                middle = low + (high - low) / 2
                low, high = (middle, high) if offset(middle) == changes[-1][1] else (low, middle)
            changes.append((high, offset(high)))
        moment = following
    return changes


def utc_offset(column: Any, period: Period) -> Any:
    """The zone's UTC offset in seconds at the naive UTC instant `column`: a CASE over the DST
    segments of the period (offset_changes), so the database converts without time zone
    functions: PostgreSQL's AT TIME ZONE costs more per row than the scan itself
    (measured: bench/README.md, "Analytics: the agent read surface")."""
    changes = offset_changes(period.zone, period.start, period.end)
    if len(changes) == 1:
        return changes[0][1]
    return Case(None, [(column < until, seconds) for until, seconds
                       in zip([at for at, _ in changes[1:]],
                              [seconds for _, seconds in changes], strict=False)],
                changes[-1][1])


def time_bucket(unit: str, column: Any, period: Period) -> ColumnBase:
    """The local hour, day, week (its Monday) or month of a naive UTC `column`: the instant
    moved by its UTC offset (utc_offset), then truncated (app.storage.dialect.local_bucket)."""
    return local_bucket(unit, column, 0 if period.timezone == "UTC"
                        else utc_offset(column, period))


def bucket_text(unit: str, value: Any) -> Any:
    """A time bucket as the results give it (YYYY-MM-DD, ...): PostgreSQL's truncated instant
    formatted; SQLite's text as it is."""
    return value.strftime(BUCKET_FORMATS[unit]) if isinstance(value, datetime) else value
