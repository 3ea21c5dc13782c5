"""What every query shares: the period, one read snapshot, weighted counts, the ranking engine."""
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from peewee import (
    SQL,
    Case,
    Expression,
    Select,
    Value,
    fn,
)

from app.analytics.sql import bytewise, url_path
from app.db import is_postgres
from models import Event, database

MAX_DAYS = 366  # the longest period a tool accepts
WORK_MEM = "64MB"


@dataclass(frozen=True)
class Period:
    """UTC days `first` to `last`, both inclusive."""

    first: date
    last: date

    @property
    def start(self) -> datetime:
        return datetime.combine(self.first, time())

    @property
    def end(self) -> datetime:
        return datetime.combine(self.last + timedelta(days=1), time())

    def covers(self, column: Any) -> Expression:
        return (column >= self.start) & (column < self.end)


@contextmanager
def reading() -> Iterator[None]:
    """One read-only transaction per tool call, so its statements see one snapshot.

    On PostgreSQL the transaction also gets enough memory for a million-row hash or sort to stay
    off disk, and no JIT (compiling costs more than these queries run). Peewee has no spelling
    for SET, hence the three statements, PostgreSQL only.
    """
    with database.atomic():
        if is_postgres():
            database.execute_sql("SET TRANSACTION READ ONLY")
            database.execute_sql(f"SET LOCAL work_mem = '{WORK_MEM}'")
            database.execute_sql("SET LOCAL jit = off")
        yield


def when(condition: Any, value: Any) -> Case:
    return Case(None, [(condition, value)], 0)


def is_sampled(weight: Any) -> Case:
    return when(weight != 1, 1)


def event_filter(site_id: int, period: Period, *types: str) -> Expression:
    where = (Event.site_id == site_id) & period.covers(Event.occurred_at)
    if len(types) == 1:
        where &= Event.type == types[0]
    elif types:
        where &= Event.type.in_(types)
    return where


def as_count(value: Any) -> int:
    """A weighted count as the integer it estimates."""
    return round(float(value or 0))


def rate(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


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


def url_pages(source: Any, name: str) -> Any:
    """CTE (url, page): the page path of each distinct `url` of `source`. Deriving it after the
    GROUP BY runs the string functions once per URL instead of once per event."""
    url = source.c.url
    return Select([source], [url, url_path(url).alias("page")]).group_by(url).cte(name)


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
