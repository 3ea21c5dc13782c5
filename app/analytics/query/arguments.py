"""The `query` tool's arguments, parsed and validated into a `Query`; an ArgumentError names the
first bad one in the sentence the agent reads."""
from dataclasses import dataclass
from typing import Any

from app.analytics.errors import ArgumentError, unknown
from app.analytics.filters import Filters, Leaf, parse_filters
from app.analytics.period import Period
from app.analytics.vocabulary import (
    MONEY_METRICS,
    ROLLING_METRICS,
    Dimension,
    dimension,
    metric,
)
from app.web.schema import whole_number

MAX_METRICS, MAX_DIMENSIONS = 10, 3
MAX_LIMIT, DEFAULT_LIMIT = 1000, 100
GOAL = "event:goal"
PAGE = "event:page"
TYPE = "event:type"


@dataclass(frozen=True)
class Query:
    metrics: tuple[str, ...]
    dimensions: tuple[Dimension, ...]
    filters: Filters
    order_by: tuple[tuple[str, str], ...] = ()
    limit: int = DEFAULT_LIMIT
    offset: int = 0
    compare: Any = None
    currency: str | None = None  # of the money metrics


def _names(raw: Any, argument: str, least: int, most: int) -> list[Any]:
    if raw is None:
        raw = []
    if not isinstance(raw, list) or not least <= len(raw) <= most:
        raise ArgumentError(f"`{argument}` must be a list of {least} to {most} names.")
    if len(set(map(str, raw))) != len(raw):
        raise ArgumentError(f"`{argument}` names one of them twice.")
    return raw


def _integer(raw: Any, argument: str, low: int, high: int, default: int) -> int:
    if raw is None:
        return default
    value = whole_number(raw)  # 100.0 is 100, as JSON Schema's integer says
    if value is None or not low <= value <= high:
        raise ArgumentError(f"`{argument}` must be an integer from {low} to {high}.")
    return value


def goal_leaf(filters: Filters) -> Leaf | None:
    """The top-level `is` filter on event:goal, which conversion_rate can use."""
    for node in filters:
        if isinstance(node, Leaf) and node.op == "is" and node.dimension.name == GOAL:
            return node
    return None


def _order_by(order: Any, names: list[str]) -> list[tuple[str, str]]:
    if order is None:
        return []
    if not isinstance(order, list):
        raise ArgumentError('`order_by` must be a list of [name, "asc"|"desc"] pairs.')
    found = []
    for pair in order:
        if not isinstance(pair, list) or len(pair) != 2 or pair[1] not in ("asc", "desc"):
            raise ArgumentError(f'Invalid order_by {pair!r}: give [name, "asc"|"desc"].')
        if pair[0] not in names:
            raise unknown("order_by name", pair[0], tuple(names))
        found.append((pair[0], pair[1]))
    return found


def parse_query(arguments: dict[str, Any]) -> Query:
    """The validated query; an ArgumentError names the first bad argument."""
    metrics = tuple(metric(name).name for name in
                    _names(arguments.get("metrics"), "metrics", 1, MAX_METRICS))
    dimensions = tuple(dimension(name) for name in
                       _names(arguments.get("dimensions"), "dimensions", 0, MAX_DIMENSIONS))
    filters = parse_filters(arguments.get("filters"))
    if "percentage" in metrics and not dimensions:
        raise ArgumentError("Metric 'percentage' needs a dimension: add one to `dimensions`.")
    names = [d.name for d in dimensions]
    currency = _money(metrics, dimensions, arguments.get("currency"))
    if "conversion_rate" in metrics and GOAL not in names and goal_leaf(filters) is None:
        raise ArgumentError("Metric 'conversion_rate' needs 'event:goal' in `dimensions` or "
                            "an [\"is\", \"event:goal\", [...]] filter.")
    return Query(metrics, dimensions, filters,
                 tuple(_order_by(arguments.get("order_by"), [*metrics, *names])),
                 _integer(arguments.get("limit"), "limit", 1, MAX_LIMIT, DEFAULT_LIMIT),
                 _integer(arguments.get("offset"), "offset", 0, 10**9, 0),
                 arguments.get("compare"), currency)


def _money(metrics: tuple[str, ...], dimensions: tuple[Dimension, ...],
           currency: Any) -> str | None:
    """The `currency` of a query of money metrics (MONEY_METRICS), which read no other metric
    and no event:* dimension."""
    money = [name for name in metrics if name in MONEY_METRICS]
    if currency is not None and (not isinstance(currency, str) or not money):
        raise ArgumentError("`currency` (an ISO 4217 code such as \"EUR\") goes with the money "
                            f"metrics: {', '.join(MONEY_METRICS)}.")
    if not money:
        return None
    if len(money) != len(metrics):
        raise ArgumentError(f"The money metrics ({', '.join(MONEY_METRICS)}) go in a query of "
                            "their own: ask the others in another call.")
    for d in dimensions:
        if d.kind == "event":
            raise ArgumentError(f"Dimension {d.name!r} cannot split money metrics: a payment "
                                "is credited to a visit; give visit:* or time:* dimensions.")
    return currency.upper() if currency else None


def check_period(query: Query, period: Period) -> None:
    """What the period allows of the query: a rolling window its metrics (ROLLING_METRICS),
    time:minute one day at most; an ArgumentError otherwise."""
    if period.rolling:
        for name in query.metrics:
            if name not in ROLLING_METRICS:
                raise ArgumentError(f"Metric {name!r} is not answered over a rolling period "
                                    f"(5min, 30min): give {', '.join(ROLLING_METRICS)}, or a "
                                    "period of days.")
    if any(d.name == "time:minute" for d in query.dimensions) and not period.within_a_day:
        raise ArgumentError("Dimension 'time:minute' needs a period of one day at most: "
                            "period 5min, 30min, today or yesterday, or `from` = `to`; "
                            "time:hour for longer periods.")
