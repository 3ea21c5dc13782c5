"""The ranking engine: the top keys per dimension, with their units and totals, in one
statement."""
from dataclasses import dataclass
from typing import Any

from peewee import SQL, Case, Select, fn

from app.analytics.events import fetch
from app.analytics.numbers import as_count, timestamp
from app.storage.dialect import bytewise


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
