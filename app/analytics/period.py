"""The period a read answers: local days of the site's zone, as tool arguments name them
(`from`/`to`, `period`, `compare`), and the UTC instants bounding them; or, for `query`, a
rolling window of minutes ending at the call (ROLLING: who is on the site now)."""
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import cached_property
from typing import Any
from zoneinfo import ZoneInfo

from peewee import Expression

from app.analytics.errors import ArgumentError, unknown

MAX_DAYS = 366  # the longest period a tool accepts
DEFAULT_DAYS = 30
# The days a tool answers: a local day's UTC bounds (a day either side, by the zone) and a year's
# shift stay within the dates Python and both databases hold (years 1 to 9999).
FIRST_DAY, LAST_DAY = date(2, 1, 1), date(9998, 12, 31)
PERIODS = ("today", "yesterday", "7d", "28d", "30d", "90d", "this_month", "last_month", "12mo")
# rolling windows ending at the call, in minutes: `query` alone reads them
ROLLING = {"5min": 5, "30min": 30}


def local_midnight(day: date, zone: ZoneInfo) -> datetime:
    """The naive UTC instant at which the local `day` begins in `zone`."""
    return datetime.combine(day, time(), tzinfo=zone).astimezone(UTC).replace(tzinfo=None)


@dataclass(frozen=True)
class Period:
    """Local days `first` to `last`, both inclusive, of the IANA zone `timezone`. `start` and
    `end` are the naive UTC instants (what `occurred_at` holds) bounding them, so a local day
    across a DST change spans 23 or 25 hours."""

    first: date
    last: date
    timezone: str = "UTC"
    # a rolling window's naive UTC bounds [start, end): then `first` and `last` are the local
    # days they lie in
    window: tuple[datetime, datetime] | None = None

    @cached_property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    @property
    def rolling(self) -> bool:
        return self.window is not None

    @property
    def start(self) -> datetime:
        return self.window[0] if self.window else local_midnight(self.first, self.zone)

    @property
    def end(self) -> datetime:
        return self.window[1] if self.window else local_midnight(self.last + timedelta(days=1),
                                                                 self.zone)

    @property
    def within_a_day(self) -> bool:
        """Whether the period spans one day at most (time:minute's bound)."""
        return self.rolling or self.first == self.last

    def bounds(self) -> tuple[str, str]:
        """`from` and `to` as an answer names them: the local days, or a rolling window's
        local instants with their offset (2026-12-01T22:25:03+01:00)."""
        if self.window is None:
            return self.first.isoformat(), self.last.isoformat()
        return tuple(local_instant(at, self.zone).isoformat(timespec="seconds")
                     for at in self.window)  # type: ignore[return-value]

    @property
    def days(self) -> int:
        return (self.last - self.first).days + 1

    def covers(self, column: Any) -> Expression:
        return (column >= self.start) & (column < self.end)

    def moved(self, first: date, last: date) -> "Period":
        return Period(first, last, self.timezone)


def local_instant(instant: datetime, zone: ZoneInfo) -> datetime:
    """The naive UTC `instant` in `zone`."""
    return instant.replace(tzinfo=UTC).astimezone(zone)


def rolling_window(minutes: int, end: datetime, timezone: str) -> Period:
    """The `minutes` ending at the naive UTC instant `end`."""
    start = end - timedelta(minutes=minutes)
    zone = ZoneInfo(timezone)
    return Period(local_instant(start, zone).date(), local_instant(end, zone).date(), timezone,
                  (start, end))


def today_in(timezone: str) -> date:
    return datetime.now(UTC).astimezone(ZoneInfo(timezone)).date()


def _years_before(day: date, years: int) -> date:
    try:
        return day.replace(year=day.year - years)
    except ValueError:  # 29 February
        return day.replace(year=day.year - years, day=28)


def shorthand_period(name: str, today: date, timezone: str) -> Period:
    """`period` (one of PERIODS): local days ending today, or a calendar month."""
    month_start = today.replace(day=1)
    if name == "this_month":
        return Period(month_start, today, timezone)
    if name == "last_month":
        last = month_start - timedelta(days=1)
        return Period(last.replace(day=1), last, timezone)
    if name == "12mo":
        return Period(_years_before(today, 1) + timedelta(days=1), today, timezone)
    days = {"today": 1, "yesterday": 1, "7d": 7, "28d": 28, "30d": 30, "90d": 90}[name]
    last = today - timedelta(days=1) if name == "yesterday" else today
    return Period(last - timedelta(days=days - 1), last, timezone)


def resolve_period(timezone: str, first: date | None = None, last: date | None = None,
                   shorthand: str | None = None, today: date | None = None,
                   rolling: bool = False) -> Period:
    """The period a tool call asks for: `from`/`to` (inclusive local days) or `period`,
    by default the last 30 days ending today in the site's zone; with `rolling` (`query`) a
    `period` of ROLLING too, ending now."""
    today = today or today_in(timezone)
    if shorthand is not None:
        if first is not None or last is not None:
            raise ArgumentError("Give either `period` or `from`/`to`, not both.")
        if rolling and shorthand in ROLLING:
            return rolling_window(ROLLING[shorthand], datetime.now(UTC).replace(tzinfo=None),
                                  timezone)
        if shorthand not in PERIODS:
            if shorthand in ROLLING:
                raise ArgumentError(f"Period {shorthand!r} (a rolling window) is for `query`; "
                                    f"here give one of {', '.join(PERIODS)}.")
            raise unknown("period", shorthand, (*PERIODS, *ROLLING) if rolling else PERIODS)
        return shorthand_period(shorthand, today, timezone)
    for day, argument in ((first, "from"), (last, "to")):
        _in_range(day, f"`{argument}` is")
    last = last or today
    first = first or max(FIRST_DAY, last - timedelta(days=DEFAULT_DAYS - 1))
    if first > last:
        raise ArgumentError(f"`from` ({first}) is after `to` ({last}).")
    if (last - first).days >= MAX_DAYS:
        raise ArgumentError(f"The period spans more than {MAX_DAYS} days; "
                            "ask for a year at most per call.")
    return Period(first, last, timezone)


def _in_range(day: date | None, says: str) -> None:
    """An ArgumentError, `says` (the argument, "`from` is") the day, when it lies out of range."""
    if day is not None and not FIRST_DAY <= day <= LAST_DAY:
        raise ArgumentError(f"{says} {day.isoformat()}: dates run from "
                            f"{FIRST_DAY.isoformat()} to {LAST_DAY.isoformat()}.")


def compare_period(period: Period, compare: Any) -> Period:
    """The period a `compare` argument names: previous_period, year_over_year or
    {"from", "to"}; its days within FIRST_DAY and LAST_DAY too. A rolling window compares with
    the window before it or a year before it."""
    if period.window is not None:
        start, end = period.window
        if compare == "previous_period":
            return rolling_window(round((end - start).total_seconds() / 60), start,
                                  period.timezone)
        if compare == "year_over_year":
            return rolling_window(round((end - start).total_seconds() / 60),
                                  datetime.combine(_years_before(end.date(), 1), end.time()),
                                  period.timezone)
        raise ArgumentError(f"Invalid compare {compare!r} for a rolling period: give "
                            "'previous_period' or 'year_over_year'.")
    if compare in ("previous_period", "year_over_year"):
        # a period from FIRST_DAY, of MAX_DAYS at most, moves back no further than year 1
        if compare == "previous_period":
            last = period.first - timedelta(days=1)
            first = last - timedelta(days=period.days - 1)
        else:
            first, last = _years_before(period.first, 1), _years_before(period.last, 1)
        _in_range(first, f"The period `compare` ({compare}) asks for begins on")
        return period.moved(first, last)
    if isinstance(compare, dict) and set(compare) == {"from", "to"}:
        try:
            first, last = (date.fromisoformat(str(compare[key])) for key in ("from", "to"))
        except ValueError:
            raise ArgumentError("`compare.from` and `compare.to` must be dates (YYYY-MM-DD)."
                                ) from None
        for day, argument in ((first, "from"), (last, "to")):
            _in_range(day, f"`compare.{argument}` is")
        return resolve_period(period.timezone, first, last)
    raise ArgumentError(f"Invalid compare {compare!r}: give 'previous_period', "
                        "'year_over_year' or {\"from\": \"YYYY-MM-DD\", \"to\": \"YYYY-MM-DD\"}.")
