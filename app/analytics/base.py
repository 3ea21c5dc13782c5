"""What every query shares: the period, the events it scans, one read snapshot, weighted counts,
the ranking engine."""
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar, copy_context
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from difflib import get_close_matches
from functools import cached_property
from typing import Any
from zoneinfo import ZoneInfo

from peewee import (
    SQL,
    Case,
    Expression,
    Select,
    Value,
    fn,
)

from app.rollups.mark import counting_merged
from app.storage.dialect import bytewise, export_snapshot, read_transaction, reads_in_parallel
from models import Event, database

MAX_DAYS = 366  # the longest period a tool accepts
DEFAULT_DAYS = 30
# The days a tool answers: a local day's UTC bounds (a day either side, by the zone) and a year's
# shift stay within the dates Python and both databases hold (years 1 to 9999).
FIRST_DAY, LAST_DAY = date(2, 1, 1), date(9998, 12, 31)
PERIODS = ("today", "yesterday", "7d", "28d", "30d", "90d", "this_month", "last_month", "12mo")


class ArgumentError(ValueError):
    """A bad argument of a tool; the message is the one sentence the agent reads."""


def closest(word: str, valid: list[str] | tuple[str, ...]) -> str:
    """' Did you mean 'x'?' for the valid name closest to `word`, or ''."""
    found = get_close_matches(str(word), list(valid), n=1, cutoff=0.5)
    return f" Did you mean '{found[0]}'?" if found else ""


def unknown(what: str, word: Any, valid: list[str] | tuple[str, ...]) -> ArgumentError:
    """`Unknown metric 'visit'. Did you mean 'visits'? Valid metrics: a, b, c.`"""
    return ArgumentError(f"Unknown {what} {word!r}.{closest(word, valid)} "
                         f"Valid {what}s: {', '.join(valid)}.")


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

    @cached_property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    @property
    def start(self) -> datetime:
        return local_midnight(self.first, self.zone)

    @property
    def end(self) -> datetime:
        return local_midnight(self.last + timedelta(days=1), self.zone)

    @property
    def days(self) -> int:
        return (self.last - self.first).days + 1

    def covers(self, column: Any) -> Expression:
        return (column >= self.start) & (column < self.end)

    def moved(self, first: date, last: date) -> "Period":
        return Period(first, last, self.timezone)


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
                   shorthand: str | None = None, today: date | None = None) -> Period:
    """The period a tool call asks for: `from`/`to` (inclusive local days) or `period`,
    by default the last 30 days ending today in the site's zone."""
    today = today or today_in(timezone)
    if shorthand is not None:
        if first is not None or last is not None:
            raise ArgumentError("Give either `period` or `from`/`to`, not both.")
        if shorthand not in PERIODS:
            raise unknown("period", shorthand, PERIODS)
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
    {"from", "to"}; its days within FIRST_DAY and LAST_DAY too."""
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


_call_memo: ContextVar[dict[Hashable, Any] | None] = ContextVar("call_memo", default=None)
_call_timeout: ContextVar[float | None] = ContextVar("call_timeout", default=None)
_within: ContextVar[bool] = ContextVar("within", default=False)  # inside `concurrently`


def memoized(key: Hashable, compute: Callable[[], Any]) -> Any:
    """`compute()`, once per key within one `reading` (one tool call, one snapshot): what
    several statements of a call need, such as the visits across a period's edges."""
    memo = _call_memo.get()
    if memo is None:
        return compute()
    if key not in memo:
        memo[key] = compute()
    return memo[key]


@contextmanager
def reading(timeout_seconds: float | None = None, memo: dict[Hashable, Any] | None = None,
            snapshot: str | None = None) -> Iterator[None]:
    """One read-only transaction per tool call (app.storage.dialect.read_transaction, with its time
    limit), so its statements see one snapshot (`snapshot`, another transaction's, exported, for
    `concurrently`), in which the event scans stop at the rollups' mark
    (app.rollups.mark.counting_merged): every figure of one answer counts the same events. A
    statement stopped by the limit raises app.storage.dialect.QueryTimeoutError. What `memoized`
    computes lives as long as the transaction, or as the call's whose `memo` a concurrent read
    shares."""
    memo_token, limit_token = (_call_memo.set({} if memo is None else memo),
                               _call_timeout.set(timeout_seconds))
    try:
        with read_transaction(timeout_seconds, snapshot), counting_merged():
            yield
    finally:
        _call_memo.reset(memo_token)
        _call_timeout.reset(limit_token)


def concurrently(*calls: Callable[[], Any]) -> list[Any]:
    """The calls' results, the reads of one tool call run at once on PostgreSQL: the first on
    the caller's transaction, each other one in a thread on a connection and read transaction
    of its own (`reading`, with the caller's time limit). A statement runs on one core, so a
    comparison period read beside the queried one halves what the agent waits on the 2-core
    machine (bench/README.md). At most one level: a call made this way runs its own
    `concurrently` in turn, so a request holds at most two connections of the pool, and a
    worker's 4 threads (deploy/) at most the pool's 8 (app.storage.db). SQLite (one writer, small
    data) and calls outside `reading` run in turn. An error in any call is raised here."""
    if len(calls) < 2 or not can_run_concurrently():
        return [call() for call in calls]
    timeout, memo = _call_timeout.get(), _call_memo.get()
    snapshot = memoized("snapshot", export_snapshot)  # this call's: same events, same rollups

    def beside(call: Callable[[], Any]) -> Any:
        with database.connection_context(), reading(timeout, memo, snapshot):
            return call()

    within = _within.set(True)
    try:
        with ThreadPoolExecutor(max_workers=len(calls) - 1) as pool:
            others = [pool.submit(copy_context().run, beside, call) for call in calls[1:]]
            first = calls[0]()
            return [first, *[future.result() for future in others]]
    finally:
        _within.reset(within)


def can_run_concurrently() -> bool:
    """Whether `concurrently` would run its calls at once here."""
    return reads_in_parallel() and _call_memo.get() is not None and not _within.get()


def when(condition: Any, value: Any) -> Case:
    return Case(None, [(condition, value)], 0)


def is_sampled(weight: Any) -> Case:
    return when(weight != 1, 1)


def event_scope(site_id: int, period: Period) -> Expression:
    """The events a read of `period` scans: the one place where the analytics render the event
    table's site and period bound. The bound on what a read may see (the events the rollups
    have merged) is models.Event's `select`, under every scan of the table."""
    return (Event.site_id == site_id) & period.covers(Event.occurred_at)


def event_filter(site_id: int, period: Period, *types: str) -> Expression:
    where = event_scope(site_id, period)
    if len(types) == 1:
        where &= Event.type == types[0]
    elif types:
        where &= Event.type.in_(types)
    return where


def as_count(value: Any) -> int:
    """A weighted count as the integer it estimates."""
    return round(float(value or 0))


def percent(part: float, whole: float) -> float | None:
    """`part` as % of `whole`, 1 decimal: every rate of every tool; None without a whole."""
    return round(part / whole * 100, 1) if whole else None


def day_of(value: Any) -> str:
    """An aggregated date or datetime (a string on SQLite) as YYYY-MM-DD."""
    return str(value)[:10]


def timestamp(value: Any) -> str | None:
    if value is None:
        return None
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment.replace(microsecond=0).isoformat() + "Z"


def fetch(query: Any) -> list[dict[str, Any]]:
    return list(query.bind(database).dicts())


def event_rows(where: Expression, dim: str, key: Any, unit: Any, at: bool = False) -> Select:
    """Events as `top_keys` rows: dim, key, unit, w, uw, sampled[, at]."""
    return Event.select(Value(dim).alias("dim"), key.alias("key"), unit.alias("unit"),
                        Event.weight.alias("w"), Event.weight.alias("uw"),
                        is_sampled(Event.weight).alias("sampled"),
                        *([Event.occurred_at.alias("at")] if at else [])).where(where)


@dataclass(frozen=True)
class Ranking:
    rows: list[dict[str, Any]]  # key, count, units (, latest)
    total: int  # weighted count over every key, not only the listed ones
    keys: int  # how many distinct keys there are
    estimated: bool


EMPTY = Ranking([], 0, 0, False)


def top_keys(rows: Any, limits: dict[str, int], ctes: tuple[Any, ...] = (),
            latest: bool = False) -> dict[str, Ranking]:
    """Per dimension of `rows` (a CTE: dim, key, unit, w, uw, sampled[, at]), the top keys by
    weighted count, each with its weighted number of distinct non-null units (visitors,
    sessions; a unit weighs its largest weight `uw`), plus the dimension's totals. One
    statement whatever the number of dimensions, so the rows are read once.

    `w` is a weight, or a sum of weights when the caller pre-aggregated its rows."""
    c = rows.c
    per_unit = (Select([rows], [c.dim, c.key, c.unit, fn.SUM(c.w).alias("n"),
                                fn.MAX(c.uw).alias("uw"), fn.MAX(c.sampled).alias("sampled"),
                                *([fn.MAX(c.at).alias("at")] if latest else [])])
                .group_by(c.dim, c.key, c.unit).cte("per_unit"))
    u = per_unit.c
    in_dim = {"partition_by": [u.dim]}
    per_key = (Select([per_unit], [
        u.dim, u.key, fn.SUM(u.n).alias("n"),
        fn.SUM(Case(None, [(u.unit.is_null(False), u.uw)], 0)).alias("units"),
        fn.MAX(u.sampled).alias("sampled"),
        *([fn.MAX(u.at).alias("at")] if latest else []),
        fn.SUM(fn.SUM(u.n)).over(**in_dim).alias("total"),
        fn.MAX(fn.MAX(u.sampled)).over(**in_dim).alias("any_sampled"),
        fn.COUNT(SQL("*")).over(**in_dim).alias("keys"),
        fn.ROW_NUMBER().over(partition_by=[u.dim],
                             order_by=[fn.SUM(u.n).desc(), bytewise(u.key)]).alias("place"),
    ]).group_by(u.dim, u.key).cte("per_key"))
    k = per_key.c
    limit = Case(k.dim, list(limits.items()), 0)
    found = fetch(Select([per_key], [SQL("*")]).where(k.place <= limit)
                   .order_by(k.dim, k.place).with_cte(*ctes, rows, per_unit, per_key))
    rankings = dict.fromkeys(limits, EMPTY)
    for dim in limits:
        listed = [row for row in found if row["dim"] == dim]
        if listed:
            rankings[dim] = Ranking(
                [{"key": row["key"], "count": as_count(row["n"]), "units": as_count(row["units"]),
                  **({"latest": timestamp(row["at"])} if latest else {})} for row in listed],
                as_count(listed[0]["total"]), int(listed[0]["keys"]),
                bool(listed[0]["any_sampled"]))
    return rankings
