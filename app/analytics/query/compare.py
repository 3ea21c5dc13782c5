"""`compare`: the figures of another period beside each row and the totals, and the change."""
from datetime import date, datetime, timedelta
from typing import Any

from app.analytics.period import Period
from app.analytics.query.arguments import Query
from app.analytics.query.figures import Figures
from app.analytics.vocabulary import METRICS, RATES

# the metrics a row without figures in the other period has as 0 there (counts), not null
COUNTS = frozenset(name for name in METRICS if name not in RATES | {
    "views_per_visit", "visit_duration", "percentage", "average_revenue"})


def change(name: str, current: Any, before: Any) -> float | None:
    """The relative change in % (1 decimal; null when the base is 0), for a rate (bounce_rate,
    conversion_rate) the difference in points."""
    if current is None or before is None:
        return None
    if name in RATES:
        return round(current - before, 1)
    return round((current - before) / before * 100, 1) if before else None


def shift(value: Any, name: str, days: int, months: int, by: timedelta | None = None) -> Any:
    """A comparison period's time bucket moved onto the queried period's, so rows match: by
    `by` for a rolling window's minutes and hours."""
    if value is None or not name.startswith("time:"):
        return value
    if by is not None and name in ("time:minute", "time:hour"):
        moved_at = datetime.fromisoformat(value) + by
        return moved_at.strftime("%Y-%m-%dT%H:%M" if name == "time:minute" else "%Y-%m-%dT%H:00")
    if name == "time:month":
        year, month = map(int, value.split("-"))
        index = year * 12 + month - 1 + months
        return f"{index // 12:04d}-{index % 12 + 1:02d}"
    moved = date.fromisoformat(value[:10]) + timedelta(days=days)
    if name == "time:week":
        moved -= timedelta(days=moved.weekday())
    return moved.isoformat() + value[10:]


def compared(answer: dict[str, Any], query: Query, period: Period, other: Period,
             page: list[dict[str, Any]], before: Figures) -> None:
    """Add the comparison to `answer` (whose results are `page`'s rows, in order)."""
    days = (period.first - other.first).days
    months = (period.first.year - other.first.year) * 12 + period.first.month \
        - other.first.month
    by = period.start - other.start if period.rolling else None
    names = [d.name for d in query.dimensions]
    earlier = {tuple(shift(value, name, days, months, by) for value, name in
                     zip(row["key"], names, strict=True)): row for row in before.rows}
    for result, row in zip(answer["results"], page, strict=True):
        then = earlier.get(row["key"], {})
        values = [then.get(name, 0 if name in COUNTS else None) for name in query.metrics]
        result["comparison"] = {"metrics": values, "change": [
            change(name, now, was) for name, now, was in
            zip(query.metrics, result["metrics"], values, strict=True)]}
    first, last = other.bounds()
    answer["comparison"] = {"from": first, "to": last,
                            "totals": [before.totals.get(name) for name in query.metrics]}
