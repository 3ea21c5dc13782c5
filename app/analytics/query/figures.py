"""The figures of a query: its statements run (rows and totals, concurrently where the
database can), their sums turned into the metrics (vocabulary.figures), and the two metrics
that need another row: conversion_rate (the visits counted without the goal condition) and
percentage (all visitors of the query)."""
from dataclasses import dataclass, replace
from typing import Any

from peewee import Select

from app.analytics.events import fetch
from app.analytics.filters import Leaf, Node
from app.analytics.local_time import bucket_text
from app.analytics.numbers import percent
from app.analytics.period import Period
from app.analytics.query.arguments import GOAL, Query, goal_leaf
from app.analytics.query.statement import statement
from app.analytics.reading import can_run_concurrently, concurrently, memoized
from app.analytics.vocabulary import SUMS, Dimension, figures
from models import Site, database

NOTHING = {"grand": 1, **dict.fromkeys(SUMS, 0), "sampled": 0, "total_rows": 0}  # no rows


@dataclass(frozen=True)
class Figures:
    rows: list[dict[str, Any]]  # {"key": tuple, **metric values, "sums": the row's sums}
    totals: dict[str, Any]
    total_rows: int
    estimated: bool
    capped: bool


def split_scope(query: Query, dimensions: tuple[Dimension, ...]) -> Query:
    """`query` narrowed to the events its split can show, for its totals. By event:goal the rows
    are the goal events only (the others are in no row), so the totals count those: the
    conversions, as a goal breakdown's totals do in Plausible, not every event of the period
    beside rows that hold a few of them. Other splits need nothing: every event is in a row
    (event:name's null row holds the events without a name)."""
    scope: tuple[Node, ...] = tuple(Leaf("is_not", d, (None,)) for d in dimensions
                                    if d.name == GOAL)
    return replace(query, filters=query.filters + scope) if scope else query


def _fetched(found: Select) -> list[dict[str, Any]]:
    """The statement's rows, read once per tool call: a conversion rate's denominator is often
    the totals statement again."""
    sql, params = found.bind(database).sql()
    return memoized(("statement", sql, tuple(params)), lambda: fetch(found))


def figure_rows(site: Site, period: Period, query: Query, dimensions: tuple[Dimension, ...],
                keep: Any = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(rows by the dimensions, the totals row). With an event dimension the totals are a
    statement of their own (a visit may be in several rows), which without event filters
    reads only the visit table; by event:goal, over the goal events (split_scope). Rows by
    visit and time dimensions (a visit is in one row: its first event's bucket) and their
    totals can come from one statement: they do where the two cannot run at once
    (reading.concurrently); where they can, two statements on two cores answer sooner for a
    little more CPU (measured: bench/README.md, "Analytics: the agent read surface")."""
    if dimensions and (any(d.kind == "event" for d in dimensions)  # a visit in several rows
                       or can_run_concurrently()):  # two statements, two cores
        rows, totals = concurrently(
            lambda: _fetched(statement(site, period, query, dimensions, keep, True)),
            lambda: _fetched(statement(site, period, split_scope(query, dimensions), (),
                                       keep)))
        found = rows + totals
    else:
        found = _fetched(statement(site, period, query, dimensions, keep))
    totals = [row for row in found if row["grand"] == 1]
    rows = [{**row, **{f"d{index}": bucket_text(d.column, row[f"d{index}"])
                       for index, d in enumerate(dimensions) if d.kind == "time"}}
            for row in found if row["grand"] == 0]
    return rows, totals[0] if totals else NOTHING


def _keyed(rows: list[dict[str, Any]], count: int) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {tuple(row[f"d{index}"] for index in range(count)): row for row in rows}


def _with_sums(row: dict[str, Any]) -> dict[str, Any]:
    return {**figures(row), "sums": {name: float(row.get(name) or 0) for name in SUMS}}


def read_figures(site: Site, period: Period, query: Query) -> Figures:
    """The figures of `query`: its rows (unordered: result.ordered orders them) and totals."""
    dims = query.dimensions
    found, total = figure_rows(site, period, query, dims)
    if not dims:
        found = [total]
    rows = [{"key": key, **_with_sums(row)} for key, row in _keyed(found, len(dims)).items()]
    totals = _with_sums(total)
    total_rows = int(found[0]["total_rows"]) if found else 0
    if "conversion_rate" in query.metrics:
        _conversion(site, period, query, rows, totals)
    if "percentage" in query.metrics:
        for row in rows:
            row["percentage"] = percent(row["sums"]["visitors"], totals["sums"]["visitors"])
    totals["percentage"] = None
    return Figures(rows, totals, total_rows, bool(total["sampled"]), total_rows > len(rows))


def _conversion(site: Site, period: Period, query: Query, rows: list[dict[str, Any]],
                totals: dict[str, Any]) -> None:
    """conversion_rate: the row's visits over the visits counted without the goal condition
    (the event:goal dimension, and the `is` filter on it)."""
    names = [d.name for d in query.dimensions]
    leaf = goal_leaf(query.filters)

    def keep(candidate: Leaf) -> bool:
        return candidate is not leaf

    if GOAL in names:
        at = names.index(GOAL)
        others = tuple(d for d in query.dimensions if d.name != GOAL)
        base, whole = figure_rows(site, period, query, others, keep)
        bases = _keyed(base if others else [whole], len(others))
        for row in rows:
            rest = row["key"][:at] + row["key"][at + 1:]
            row["conversion_rate"] = percent(row["sums"]["visits"],
                                             float(bases.get(rest, {}).get("visits") or 0))
        # the totals are the visits with any goal (split_scope) of all visits
        totals["conversion_rate"] = percent(totals["sums"]["visits"], float(whole["visits"] or 0))
        return
    base, whole = figure_rows(site, period, query, query.dimensions, keep)
    bases = _keyed(base if query.dimensions else [whole], len(query.dimensions))
    for row in rows:
        row["conversion_rate"] = percent(row["sums"]["visits"],
                                         float(bases.get(row["key"], {}).get("visits") or 0))
    totals["conversion_rate"] = percent(totals["sums"]["visits"], float(whole["visits"] or 0))

