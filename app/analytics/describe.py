"""describe_data: what an agent needs before it queries (DESIGN.md, `describe_data`).

The vocabulary (metrics and dimensions with their one-line definitions, from
app.analytics.vocabulary) and, for the site and period: events by type, goal names and custom
event names (with their counts), the `event:props` keys of goals and custom events with the
names and types that carry them (read from each name's latest LATEST_PER_NAME events of the
period), the first and last event, the time zone and whether sampling applied (`estimated`).
Counts are weighted by sampling weights and rounded. With `dimension` it also lists that
dimension's values with their visitors, through the `query` compiler (optionally only values
containing `search`, case-insensitively).
"""
from collections import defaultdict
from typing import Any

from peewee import SQL, Case, Select, Value, fn

from app.analytics import query, vocabulary
from app.analytics.base import ArgumentError, Period, as_count, fetch, timestamp
from app.db import is_postgres
from models import Event, Site
from models.event import EVENT_TYPES

NAMED_TYPES = {"goal": "goals", "custom": "custom_events"}
MAX_NAMES = 100  # goal and custom event names (the most used first) and property keys listed
LATEST_PER_NAME = 200  # events of each goal / custom event name whose property keys are read
DEFAULT_VALUES = 100
MAX_SEARCH = 200


def _in_period(site: Site, period: Period) -> Any:
    return (Event.site_id == site.id) & period.covers(Event.occurred_at)


def _by_type(site: Site, period: Period) -> list[dict[str, Any]]:
    """Per type, a row with its events (`n`) and, when some are sampled, a row with their
    weights minus 1 (`extra`): the weighted count is the sum of both. Both come from indexes
    without reading the table (an index-only scan of event_site_id_type_occurred_at; 0009b's
    event_sampled holds the sampled events only), where summing every event's weight read
    every row: seconds at 10 million events."""
    # Naming the types makes each one a tight range of the index (site, type, time).
    of_types = _in_period(site, period) & Event.type.in_(EVENT_TYPES)
    counted = (Event.select(Event.type.alias("type"), fn.COUNT(SQL("*")).alias("n"),
                            Value(None).alias("extra"))
               .where(of_types).group_by(Event.type))
    sampled = (Event.select(Event.type, Value(0), fn.SUM(Event.weight - 1))
               .where(of_types & (Event.weight != 1)).group_by(Event.type))
    return fetch(counted + sampled)


def _named(site: Site, period: Period) -> list[dict[str, Any]]:
    """Weighted goals and custom events per name (event_named_steps, 0009b, index-only)."""
    return fetch(Event.select(Event.type.alias("type"), Event.name.alias("name"),
                              fn.SUM(Event.weight).alias("w"))
                 .where(_in_period(site, period) & Event.type.in_(tuple(NAMED_TYPES))
                        & Event.name.is_null(False))
                 .group_by(Event.type, Event.name))


def _span(site: Site, period: Period) -> dict[str, Any]:
    return fetch(Event.select(fn.MIN(Event.occurred_at).alias("first"),
                              fn.MAX(Event.occurred_at).alias("last"))
                 .where(_in_period(site, period)))[0]


def _property_keys(site: Site, period: Period,
                   names: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """(key, type, name) of the property keys on the latest LATEST_PER_NAME events of each
    (type, name) of `names`: PostgreSQL's jsonb_object_keys, SQLite's json_each.

    Not every event: properties are in the table, and reading every event's took seconds at
    10 million events; each name's latest events are one backward range of
    event_named_steps (0009b), and only those rows are read."""
    if not names:
        return []
    latest = [Select([Event.select(Event.type.alias("type"), Event.name.alias("name"),
                                   Event.properties.alias("properties"))
                      .where(_in_period(site, period) & (Event.type == kind)
                             & (Event.name == name))
                      .order_by(Event.occurred_at.desc()).limit(LATEST_PER_NAME)
                      .alias(f"latest{index}")], [SQL("*")])
              for index, (kind, name) in enumerate(names)]
    union = latest[0]
    for part in latest[1:]:
        union += part
    carriers = union.cte("carriers")
    c = carriers.c
    where = c.properties.is_null(False)
    if is_postgres():
        keys = fn.jsonb_object_keys(Case(None, [
            (fn.jsonb_typeof(c.properties) == "object", c.properties)]))
        keys, key = keys.alias("property_key"), SQL('"property_key"')
    else:
        keys, key = fn.json_each(c.properties).alias("member"), SQL('"member"."key"')
        where &= fn.json_type(c.properties) == "object"
    return fetch(Select([carriers, keys], [key.alias("key"), c.type, c.name])
                 .where(where).group_by(key, c.type, c.name).with_cte(carriers))


def _ranked(counts: dict[str, float]) -> list[tuple[str, float]]:
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:MAX_NAMES]


def _properties(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    names: dict[str, set[str]] = defaultdict(set)
    types: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        names[row["key"]].add(row["name"])
        types[row["key"]].add(row["type"])
    return [{"key": key, "event_names": sorted(names[key]), "event_types": sorted(types[key])}
            for key in sorted(names)[:MAX_NAMES]]


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
    by_type: dict[str, float] = defaultdict(float)
    estimated = False
    for row in _by_type(site, period):
        by_type[row["type"]] += float(row["n"]) + float(row["extra"] or 0)
        estimated = estimated or row["extra"] is not None  # a sampled event's row
    named: dict[str, dict[str, float]] = {kind: defaultdict(float) for kind in NAMED_TYPES}
    for row in _named(site, period):
        named[row["type"]][row["name"]] += float(row["w"])
    listed = {kind: _ranked(named[kind]) for kind in NAMED_TYPES}
    span = _span(site, period)
    result = {
        "timezone": period.timezone,
        **vocabulary.describe(),
        "events_by_type": {kind: as_count(weight) for kind, weight in _ranked(by_type)},
        **{key: [{"name": name, "count": as_count(weight)} for name, weight in listed[kind]]
           for kind, key in NAMED_TYPES.items()},
        "properties": _properties(_property_keys(
            site, period, [(kind, name) for kind in NAMED_TYPES for name, _ in listed[kind]])),
        "first_event": timestamp(span["first"]),
        "last_event": timestamp(span["last"]),
        "estimated": estimated,
    }
    if values is not None:
        result["values"] = values
    return result


def dimension_values(site: Site, period: Period, dimension: Any, search: Any,
                     limit: Any) -> dict[str, Any]:
    """The dimension's values by visitors, the most first: the `query` tool's answer to
    visitors by that dimension, filtered with a case-insensitive `contains` when `search`."""
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
    answer = query.run_query(site, period, query.parse_query({
        "metrics": ["visitors"], "dimensions": [found.name], "filters": filters,
        "limit": limit}))
    return {"dimension": found.name, "search": search,
            "values": [{"value": row["dimensions"][0], "visitors": row["metrics"][0]}
                       for row in answer["results"]],
            "total_values": answer["total_rows"]}

