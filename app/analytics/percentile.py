"""p75: PostgreSQL's percentile_cont(0.75), and the same arithmetic on SQLite.

percentile_cont(0.75) is the linear interpolation at position 0.75 x (n - 1) of the ascending
values. SQLite has no ordered-set aggregates, so there the values are ranked with ROW_NUMBER and
COUNT windows (`ranked`) and the interpolation is spelled out (`interpolated`).
"""
from typing import Any

from peewee import (
    SQL,
    Case,
    ColumnBase,
    EnclosedNodeList,
    NodeList,
    Select,
    fn,
)

P75 = 0.75


def percentile_cont(value: Any, where: Any) -> NodeList:
    """PostgreSQL: p75 of `value` over the group's rows that match `where`."""
    ordered = EnclosedNodeList([NodeList((SQL("ORDER BY"), value))])
    # NULLs are ignored anyway; the filter spares the aggregate a call for each row without a
    # value, which is most rows when one event carries one metric of five.
    only = EnclosedNodeList([NodeList((SQL("WHERE"), where))])
    return NodeList((fn.percentile_cont(P75), SQL("WITHIN GROUP"), ordered, SQL("FILTER"), only))


def ranked(samples: Any, keys: list[Any]) -> tuple[Any, tuple[Any, ...]]:
    """SQLite: `samples` (value, w, sampled and the `keys`) with each value's 0-based rank in its
    group (`position`) and the interpolation bounds (`low`, `fraction`); and the CTEs needed."""
    s = samples.c
    position = fn.ROW_NUMBER().over(partition_by=keys, order_by=[s.value]) - 1
    span = (fn.COUNT(SQL("*")).over(partition_by=keys) - 1) * P75
    ranks = Select([samples], [*keys, s.value, s.w, s.sampled, position.alias("position"),
                               span.alias("span")]).cte("sample_ranks")
    r = ranks.c
    bounds = Select([ranks], [*[getattr(r, key.name) for key in keys], r.value, r.w, r.sampled,
                              r.position, r.span.cast("INTEGER").alias("low"),
                              (r.span - r.span.cast("INTEGER")).alias("fraction")]
                    ).cte("sample_bounds")
    return bounds, (ranks, bounds)


def interpolated(ranked_samples: Any) -> ColumnBase:
    """SQLite: the aggregate over `ranked` rows that equals percentile_cont(0.75)."""
    s = ranked_samples.c
    # PostgreSQL computes lo + (hi - lo) * fraction; the same operations, in the same order.
    low = fn.MAX(Case(None, [(s.position == s.low, s.value)]))
    high = fn.COALESCE(fn.MAX(Case(None, [(s.position == s.low + 1, s.value)])), low)
    return low + (high - low) * fn.MAX(s.fraction)
