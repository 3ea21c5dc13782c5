"""describe_data: what an agent needs before it queries (docs/AGENTS.md, `describe_data`).

The vocabulary (metrics and dimensions with their one-line definitions, from
app.analytics.vocabulary) and, for the site and period: events by type, goal names and custom
event names (with their counts), the `event:props` keys of the period's goals and custom
events with how many events carry each (in all and per name) and the names and types that
carry them, the first and last event, the time zone and whether sampling applied (`estimated`).
Counts are weighted by sampling weights and rounded. With `dimension` it also lists that
dimension's values with their visitors, through the `query` compiler (optionally only values
containing `search`, case-insensitively).
"""
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from peewee import Select, fn

from app.analytics import query, vocabulary
from app.analytics.errors import ArgumentError
from app.analytics.events import event_scope, fetch
from app.analytics.numbers import as_count, timestamp
from app.analytics.period import Period
from app.analytics.period_rows import type_sums
from app.analytics.reading import concurrently
from app.storage.dialect import in_partial_indexes, object_keys, text_size, wide
from models import Event, Site

NAMED_TYPES = {"goal": "goals", "custom": "custom_events"}
MAX_NAMES = 100  # goal and custom event names, property keys and a key's names listed (most used)
SHORT_PROPERTIES = 400  # bytes of properties as text that 0013's event_named_properties holds
DEFAULT_VALUES = 100
MAX_SEARCH = 200


def _in_period(site: Site, period: Period) -> Any:
    return event_scope(site.id, period)


def _named(site: Site, period: Period) -> list[dict[str, Any]]:
    """Weighted goals and custom events per name (event_named_steps, 0009b, index-only)."""
    return fetch(Event.select(Event.type.alias("type"), Event.name.alias("name"),
                              fn.SUM(wide(Event.weight)).alias("w"))
                 .where(_in_period(site, period) & Event.type.in_(tuple(NAMED_TYPES))
                        & Event.name.is_null(False))
                 .group_by(Event.type, Event.name))


def _span(site: Site, period: Period) -> dict[str, Any]:
    return fetch(Event.select(fn.MIN(Event.occurred_at).alias("first"),
                              fn.MAX(Event.occurred_at).alias("last"))
                 .where(_in_period(site, period)))[0]


def _carriers(site: Site, period: Period) -> Select:
    """The period's goals and custom events with properties, as (type, name, weight,
    properties).

    On PostgreSQL, those whose properties are SHORT_PROPERTIES bytes or less as text come from
    event_named_properties (0013) without reading the table, the longer ones (normally none)
    from event_named_long_properties and the table (app.storage.dialect.in_partial_indexes). The two
    conditions are spelled as the indexes' are, or the planner would not use them: counting
    the keys from the index is an order of magnitude faster than reading the properties from
    the table (measured: bench/README.md, "Analytics: the agent read surface")."""
    columns = (Event.type.alias("type"), Event.name.alias("name"),
               Event.weight.alias("weight"), Event.properties.alias("properties"))
    carrying = (_in_period(site, period) & Event.type.in_(tuple(NAMED_TYPES))
                & Event.name.is_null(False))
    size = text_size(Event.properties)
    return in_partial_indexes(lambda part: Event.select(*columns).where(carrying & part),
                              size <= SHORT_PROPERTIES, size > SHORT_PROPERTIES)


def _property_keys(site: Site, period: Period) -> list[dict[str, Any]]:
    """(key, type, name, w) of every property key of the period's goals and custom events, `w`
    the weight of the (type, name) events carrying it."""
    carriers = _carriers(site, period).cte("carriers")
    c = carriers.c
    keyed = object_keys(carriers, c.properties, [c.type, c.name, c.weight]).alias("keyed")
    k = keyed.c
    # A sum of PostgreSQL `real`s is a `real`, which stops counting at 2**24 (16.8 million).
    weight = fn.SUM(k.weight.cast("double precision")).alias("w")
    return fetch(Select([keyed], [k.key, k.type, k.name, weight])
                 .group_by(k.key, k.type, k.name).with_cte(carriers))


def _ranked(counts: dict[str, float]) -> list[tuple[str, float]]:
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:MAX_NAMES]


def _properties(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The most carried keys first, each with its weighted events in all and per name (a name
    of both a goal and a custom event counts both)."""
    weights: dict[str, float] = defaultdict(float)
    by_name: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    types: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        weights[row["key"]] += float(row["w"])
        by_name[row["key"]][row["name"]] += float(row["w"])
        types[row["key"]].add(row["type"])
    return [_property(key, weight, _ranked(by_name[key]), types[key])
            for key, weight in _ranked(weights)]


def _property(key: str, weight: float, names: list[tuple[str, float]],
              types: set[str]) -> dict[str, Any]:
    return {"key": key, "count": as_count(weight),
            "event_names": sorted(name for name, _ in names), "event_types": sorted(types),
            "count_by_name": {name: as_count(name_weight) for name, name_weight in names}}


def describe(site: Site, period: Period, dimension: str | None = None,
             search: str | None = None, limit: int = DEFAULT_VALUES) -> dict[str, Any]:
    """The describe_data payload: {"timezone", "metrics", "dimensions", "events_by_type",
    "goals", "custom_events", "properties" (the MAX_NAMES most used of each; "goals_total",
    "custom_events_total" and "properties_total" count them all), "first_event", "last_event",
    "estimated"} and,
    with `dimension`, "values": {"dimension", "search", "values": [{"value", "visitors"}],
    "total_values"}. Bad arguments raise base.ArgumentError (checked before any counting)."""
    if dimension is None and search is not None:
        raise ArgumentError("`search` narrows the values of a `dimension`: give one too, such "
                            "as 'visit:source'.")
    if dimension is None:
        return _summary(site, period)
    values = values_reader(site, period, dimension, search, limit)  # checks its arguments
    result, found = concurrently(lambda: _summary(site, period), values)
    return {**result, "values": found}


def _summary(site: Site, period: Period) -> dict[str, Any]:
    """describe_data without `dimension`."""
    by_type, estimated = type_sums(site, period)
    named: dict[str, dict[str, float]] = {kind: defaultdict(float) for kind in NAMED_TYPES}
    for row in _named(site, period):
        named[row["type"]][row["name"]] += float(row["w"])
    listed = {kind: _ranked(named[kind]) for kind in NAMED_TYPES}
    keys = _property_keys(site, period)
    span = _span(site, period)
    return {
        "timezone": period.timezone,
        **vocabulary.describe(),
        "events_by_type": {kind: as_count(weight) for kind, weight in _ranked(by_type)},
        **{key: [{"name": name, "count": as_count(weight)} for name, weight in listed[kind]]
           for kind, key in NAMED_TYPES.items()},
        **{f"{key}_total": len(named[kind]) for kind, key in NAMED_TYPES.items()},
        "properties": _properties(keys),
        "properties_total": len({row["key"] for row in keys}),
        "first_event": timestamp(span["first"]),
        "last_event": timestamp(span["last"]),
        "estimated": estimated,
    }


def values_reader(site: Site, period: Period, dimension: Any, search: Any,
                  limit: Any) -> Callable[[], dict[str, Any]]:
    """What reads the dimension's values by visitors, the most first: the `query` tool's
    answer to visitors by that dimension, filtered with a case-insensitive `contains` when
    `search`. The arguments are checked now, an ArgumentError naming the bad one."""
    found = vocabulary.dimension(dimension, "dimension")
    if search is not None and (not isinstance(search, str) or not search.isprintable()
                               or not 1 <= len(search) <= MAX_SEARCH):
        raise ArgumentError(f"`search` must be a non-empty string of at most {MAX_SEARCH} "
                            "printable characters.")
    if search is not None and found.kind == "time":
        raise ArgumentError(f"`search` does not apply to {found.name}: narrow the days with "
                            "`from`/`to` or `period` instead.")
    filters = [] if search is None else [["contains", found.name, [search],
                                          {"case_sensitive": False}]]
    parsed = query.parse_query({"metrics": ["visitors"], "dimensions": [found.name],
                                "filters": filters, "limit": limit})
    return lambda: _values(site, period, parsed, search)


def _values(site: Site, period: Period, parsed: query.Query, search: Any) -> dict[str, Any]:
    answer = query.run_query(site, period, parsed)
    found = parsed.dimensions[0]
    return {"dimension": found.name, "search": search,
            "values": [{"value": row["dimensions"][0], "visitors": row["metrics"][0]}
                       for row in answer["results"]],
            "total_values": answer["total_rows"]}

