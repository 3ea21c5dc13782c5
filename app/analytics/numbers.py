"""How a figure is written in an answer: counts, rates, days and instants."""
from datetime import datetime
from typing import Any


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
