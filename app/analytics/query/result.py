"""The `query` tool's result: the rows ordered and paged, the totals, the comparison period's
figures beside them, and the warnings."""
from dataclasses import replace
from typing import Any

from app.analytics.period import Period, compare_period
from app.analytics.query.arguments import Query, check_period
from app.analytics.query.compare import compared
from app.analytics.query.figures import read_figures
from app.analytics.query.money import is_money, money_figures
from app.analytics.query.null_rows import null_row_warnings
from app.analytics.query.statement import ROW_CAP
from app.analytics.reading import concurrently
from models import Site


def _sort_key(value: Any, descending: bool) -> tuple[bool, Any]:
    """Nulls last in either direction."""
    if value is None:
        return (not descending, "")
    return (descending, value)


def ordered(query: Query, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rows` in the query's order (default: time ascending, else the first metric
    descending; ties by the dimensions' values in order)."""
    names = [d.name for d in query.dimensions]
    order = list(query.order_by) or (
        [(name, "asc") for name in names if name.startswith("time:")]
        or [(query.metrics[0], "desc")])
    for name in names:  # ties in dimension order, deterministic
        if name not in [n for n, _ in order]:
            order.append((name, "asc"))
    for name, direction in reversed(order):
        if name in names:
            index = names.index(name)
            value = lambda row, i=index: row["key"][i]  # noqa: E731
        else:
            value = lambda row, n=name: row[n]  # noqa: E731
        descending = direction == "desc"
        rows.sort(key=lambda row, v=value, d=descending: _sort_key(v(row), d),
                  reverse=descending)
    return rows


def run_query(site: Site, period: Period, query: Query) -> dict[str, Any]:
    """The `query` tool's result (without site/from/to/timezone, which the tool adds)."""
    check_period(query, period)
    other = compare_period(period, query.compare) if query.compare is not None else None
    money = is_money(query)
    currency = None
    if money:
        main, currency = money_figures(site, period, query)
        if other is not None:  # in the currency of the queried period
            before, _ = money_figures(site, other, replace(query, currency=currency))
        else:
            before = None
    elif other is None:
        main, before = read_figures(site, period, query), None
    else:  # the two periods at once
        main, before = concurrently(lambda: read_figures(site, period, query),
                                    lambda: read_figures(site, other, query))
    page = ordered(query, main.rows)[query.offset:query.offset + query.limit]
    warnings = []
    if main.capped:
        warnings.append(f"Only the {ROW_CAP:,} rows with the most events were ranked; narrow "
                        "the query (filters, fewer dimensions) for the rest.")
    if not money:
        warnings += null_row_warnings(site, period, query, main)
    answer: dict[str, Any] = {
        "metrics": list(query.metrics), "dimensions": [d.name for d in query.dimensions],
        "results": [{"dimensions": list(row["key"]),
                     "metrics": [row[name] for name in query.metrics]} for row in page],
        "totals": [main.totals.get(name) for name in query.metrics],
        "total_rows": main.total_rows, "estimated": main.estimated, "warnings": warnings,
        "currency": currency}  # of the money metrics; null for the others
    if other is not None and before is not None:
        compared(answer, query, period, other, page, before)
        answer["estimated"] = main.estimated or before.estimated
    return answer
