"""describe_data: what an agent needs before it queries (DESIGN.md, `describe_data`).

The vocabulary (metrics and dimensions with their one-line definitions, from
app.analytics.vocabulary) and, for the site and period: events by type, goal names and custom
event names (with their counts), the `event:props` keys with the event names and types that
carry them, the first and last event, the time zone and whether sampling applied (`estimated`).
Counts are weighted by sampling weights and rounded. With `dimension` it also lists that
dimension's values with their visitors, through the `query` compiler (optionally only values
containing `search`, case-insensitively).
"""
from collections import defaultdict
from typing import Any

from peewee import SQL, Case, Select, fn

from app.analytics import query, vocabulary
from app.analytics.base import ArgumentError, Period, as_count, fetch, is_sampled, timestamp
from app.db import is_postgres
from models import Event, Site

NAMED_TYPES = {"goal": "goals", "custom": "custom_events"}
MAX_NAMES = 100  # goal names, custom event names and property keys listed, the most used first
DEFAULT_VALUES = 100
MAX_SEARCH = 200


def _names(site: Site, period: Period) -> list[dict[str, Any]]:
    """Weighted events per type and, for goals and custom events, per name."""
    name = Case(None, [(Event.type.in_(tuple(NAMED_TYPES)), Event.name)])
    return fetch(Event.select(Event.type.alias("type"), name.alias("name"),
                              fn.SUM(Event.weight).alias("w"),
                              fn.MAX(is_sampled(Event.weight)).alias("sampled"),
                              fn.MIN(Event.occurred_at).alias("first"),
                              fn.MAX(Event.occurred_at).alias("last"))
                 .where((Event.site_id == site.id) & period.covers(Event.occurred_at))
                 .group_by(Event.type, name))


def _property_keys(site: Site, period: Period) -> list[dict[str, Any]]:
    """Weighted events per property key, type and name: PostgreSQL's jsonb_object_keys,
    SQLite's json_each, each over the events whose properties are a JSON object."""
    where = ((Event.site_id == site.id) & period.covers(Event.occurred_at)
             & Event.properties.is_null(False))
    if is_postgres():
        keys = fn.jsonb_object_keys(Case(None, [(fn.jsonb_typeof(Event.properties) == "object",
                                                 Event.properties)])).alias("property_key")
        key = SQL('"property_key"')
    else:
        keys = fn.json_each(Event.properties).alias("member")
        key = SQL('"member"."key"')
        where &= fn.json_type(Event.properties) == "object"
    return fetch(Select([Event, keys], [key.alias("key"), Event.type.alias("type"),
                                        Event.name.alias("name"),
                                        fn.SUM(Event.weight).alias("w")])
                 .where(where).group_by(key, Event.type, Event.name))


def _ranked(counts: dict[str, float]) -> list[tuple[str, float]]:
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:MAX_NAMES]


def _properties(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    weights: dict[str, float] = defaultdict(float)
    names: dict[str, set[str]] = defaultdict(set)
    types: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        weights[row["key"]] += float(row["w"])
        types[row["key"]].add(row["type"])
        if row["name"] is not None:
            names[row["key"]].add(row["name"])
    return [{"key": key, "count": as_count(weight), "event_names": sorted(names[key]),
             "event_types": sorted(types[key])} for key, weight in _ranked(weights)]


def describe(site: Site, period: Period, dimension: str | None = None,
             search: str | None = None, limit: int = DEFAULT_VALUES) -> dict[str, Any]:
    """The describe_data payload: {"timezone", "metrics", "dimensions", "events_by_type",
    "goals", "custom_events", "properties", "first_event", "last_event", "estimated"} and,
    with `dimension`, "values": {"dimension", "search", "values": [{"value", "visitors"}],
    "total_values"}. Bad arguments raise base.ArgumentError (checked before any counting)."""
    if dimension is None and search is not None:
        raise ArgumentError("`search` narrows the values of a `dimension`: give one too, such "
                            "as 'visit:source'.")
    values = None if dimension is None else dimension_values(site, period, dimension, search,
                                                             limit)
    rows = _names(site, period)
    by_type: dict[str, float] = defaultdict(float)
    named: dict[str, dict[str, float]] = {kind: defaultdict(float) for kind in NAMED_TYPES}
    for row in rows:
        by_type[row["type"]] += float(row["w"])
        if row["type"] in NAMED_TYPES and row["name"] is not None:
            named[row["type"]][row["name"]] += float(row["w"])
    result = {
        "timezone": period.timezone,
        **vocabulary.describe(),
        "events_by_type": {kind: as_count(weight) for kind, weight in _ranked(by_type)},
        **{key: [{"name": name, "count": as_count(weight)}
                 for name, weight in _ranked(named[kind])]
           for kind, key in NAMED_TYPES.items()},
        "properties": _properties(_property_keys(site, period)),
        "first_event": timestamp(min((row["first"] for row in rows), default=None)),
        "last_event": timestamp(max((row["last"] for row in rows), default=None)),
        "estimated": any(row["sampled"] for row in rows),
    }
    if values is not None:
        result["values"] = values
    return result


def dimension_values(site: Site, period: Period, dimension: Any, search: Any,
                     limit: Any) -> dict[str, Any]:
    """The dimension's values by visitors, the most first: the `query` tool's answer to
    visitors by that dimension, filtered with a case-insensitive `contains` when `search`."""
    found = vocabulary.dimension(dimension, "dimension")
    if search is not None and (not isinstance(search, str)
                               or not 1 <= len(search) <= MAX_SEARCH):
        raise ArgumentError(f"`search` must be a non-empty string of at most {MAX_SEARCH} "
                            "characters.")
    if search is not None and found.kind == "time":
        raise ArgumentError(f"`search` does not apply to {found.name}: narrow the days with "
                            "`from`/`to` or `period` instead.")
    filters = [] if search is None else [["contains", found.name, [search],
                                          {"case_sensitive": False}]]
    answer = query.run_query(site, period, query.parse_query({
        "metrics": ["visitors"], "dimensions": [found.name], "filters": filters,
        "limit": limit}))
    return {"dimension": found.name, "search": search,
            "values": [{"value": row["dimensions"][0], "visitors": row["metrics"][0]}
                       for row in answer["results"]],
            "total_values": answer["total_rows"]}

