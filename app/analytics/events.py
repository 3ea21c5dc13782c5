"""The SQL every read shares over the event table: its scope (site and period), the sampling
flags, the `top_keys` rows, and running a query to dicts."""
from typing import Any

from peewee import Case, Expression, Select, Value

from app.analytics.period import Period
from models import Event, database


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


def fetch(query: Any) -> list[dict[str, Any]]:
    return list(query.bind(database).dicts())


def event_rows(where: Expression, dim: str, key: Any, unit: Any, at: bool = False) -> Select:
    """Events as `top_keys` rows: dim, key, unit, w, uw, sampled[, at]."""
    return Event.select(Value(dim).alias("dim"), key.alias("key"), unit.alias("unit"),
                        Event.weight.alias("w"), Event.weight.alias("uw"),
                        is_sampled(Event.weight).alias("sampled"),
                        *([Event.occurred_at.alias("at")] if at else [])).where(where)
