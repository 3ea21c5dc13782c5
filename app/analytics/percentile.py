"""p75: percentile_cont(0.75), the linear interpolation at position 0.75 x (n - 1) of the
ascending values.

PostgreSQL has it as an ordered-set aggregate. SQLite has no ordered-set aggregates: there an
aggregate of egis's own (`SqliteP75`, registered on the connection when a query uses it:
app.storage.dialect.percentile_cont) does PostgreSQL's arithmetic in Python, so the query is the
same on both. It replaced a ranking of every sample with ROW_NUMBER and COUNT windows, which
made get_web_vitals on SQLite several times slower (measured: bench/README.md, "Analytics: the
ten kept MCP tools").
"""
import math
from typing import Any

from peewee import ColumnBase

from app.storage import dialect

P75 = 0.75
SQLITE_AGGREGATE = "egis_p75"


def p75(values: list[float]) -> float | None:
    """PostgreSQL's percentile_cont(0.75) of `values` (numbers), None for none."""
    if not values:
        return None
    ordered = sorted(values)
    position = P75 * (len(ordered) - 1)
    low = math.floor(position)
    if low == position:
        return ordered[low]
    # PostgreSQL's float8_lerp: lo + (hi - lo) * fraction, the same operations in the same order.
    return ordered[low] + (ordered[low + 1] - ordered[low]) * (position - low)


class SqliteP75:
    """SQLite's aggregate protocol (step, finalize) around `p75`."""

    def __init__(self) -> None:
        self.values: list[float] = []

    def step(self, value: float | None) -> None:
        if value is not None:
            self.values.append(value)

    def finalize(self) -> float | None:
        return p75(self.values)


def percentile_cont(value: Any, where: Any) -> ColumnBase:
    """p75 of `value` over the group's rows that match `where`."""
    # NULLs are ignored anyway; the filter spares the aggregate a call for each row without a
    # value, which is most rows when one event carries one metric of five.
    return dialect.percentile_cont(P75, value, where, (SQLITE_AGGREGATE, SqliteP75))
