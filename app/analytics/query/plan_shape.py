"""What a plan hands the statement builder (`Plan`), and the columns every plan's rows share:
the events' sums and a visit's figures."""
from dataclasses import dataclass
from typing import Any

from peewee import SQL, Value, fn

from app.analytics.events import is_sampled, when
from app.analytics.filters import Filters, Leaf, leaves
from app.analytics.vocabulary import METRICS, VISIT_FIGURES, Dimension
from app.storage.dialect import wide
from models import Event

EVENT_METRICS = frozenset({"events", "pageviews"})
VISIT_METRICS = frozenset(METRICS) - EVENT_METRICS


@dataclass(frozen=True)
class Plan:
    """What one statement reads: its rows (`selected`: the dimension values d0.., event sums
    and, with visits, the visit's figures), the CTEs behind them, and an event-only sum for
    the totals when the visits alone are the rows."""

    ctes: list[Any]
    selected: Any
    has_visits: bool
    visit_rows: bool = False  # the rows are the visits: no event sums on them
    event_totals: Any = None  # the events' sums beside visit rows: over everything
    event_rows: Any = None  # and per row, when time:* splits events and visits apart


def keys_of(dimensions: tuple[Dimension, ...]) -> list[str]:
    """The statement's names of the dimension values: d0, d1, d2."""
    return [f"d{index}" for index in range(len(dimensions))]


def grouped_by(keys: list[str]) -> list[Any]:
    """GROUP BY the output names: the same expression twice would bind its parameters twice,
    and PostgreSQL could not tell that the two are one."""
    return [SQL(f'"{key}"') for key in keys]


def event_sums() -> list[Any]:
    """An event weighs its sampling weight."""
    return [fn.SUM(wide(Event.weight)).alias("events"),
            fn.SUM(when(Event.type == "pageview", wide(Event.weight))).alias("pageviews"),
            fn.MAX(is_sampled(Event.weight)).alias("sampled")]


def needed_sums(metrics: tuple[str, ...]) -> set[str]:
    """The sums (vocabulary.SUMS) the metrics read."""
    return set().union(*(METRICS[name].sums for name in metrics))


def visit_columns(dimensions: tuple[Dimension, ...], filters: Filters) -> set[str]:
    """The visit table's columns that the visit:* dimensions and filters read (a has_done
    filter reads the session id alone)."""
    used = [*dimensions, *(leaf.dimension for leaf in leaves(filters) if isinstance(leaf, Leaf))]
    return {d.column for d in used if d.kind == "visit"}


def visit_needs(metrics: tuple[str, ...], dimensions: tuple[Dimension, ...],
                filters: Filters) -> set[str]:
    """The visits CTE's columns a statement reads: its visit:* columns and figures."""
    needed = needed_sums(metrics)
    return {*visit_columns(dimensions, filters),
            *(["occurred_at"] if any(d.kind == "time" for d in dimensions) else []),
            *[figure.column for figure in VISIT_FIGURES if figure.sums in needed]}


def selected_visit_values(visits: Any, columns: set[str]) -> list[Any]:
    """A visit's columns in `selected` (its id, visitor, weight and VISIT_FIGURES), of the
    visits CTE's `columns` (0 for the figures it lacks)."""
    v = visits.c
    return [v.session_id.alias("vid"), v.visitor.alias("visitor"), v.w.alias("vw"),
            *[(getattr(v, figure.column) if figure.column in columns else Value(0))
              .alias(figure.selected) for figure in VISIT_FIGURES]]
