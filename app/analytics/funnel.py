"""Funnels: how many visits (or visitors) go through 2-8 ordered steps.

Definitions (docs/AGENTS.md, `funnel`, states them for agents):
- A step is `{"page": path or pattern}` (page views whose path is that path, or matches the
  pattern: `*` any run of characters but `/`, `**` any run, the whole path), `{"goal": name}`
  (goal events of that name) or `{"event": name}` (custom events of that name), with an
  optional `label` (default `Visit /pricing`, `Goal Signup`, `Event Download`).
- Unit `visit`: a session id with at least one page view in the period (a visit); its
  events of the period count. Unit `visitor`: an anonymous id; its events of the period count,
  in a visit or not (a goal a backend posted with the visitor's id and no session counts), but
  later steps only up to `window_hours` after its earliest step-1 event (inclusive).
- A unit reaches step 1 with its earliest matching event, and step k with its earliest matching
  event at or after the time it reached step k-1 (so events out of order do not count, and one
  event that matches two consecutive steps satisfies both).
- `visit:*` filters select visits, as in `query`; for the visitor unit only the events of its
  selected visits count then.
- Weighted: a unit weighs the largest sampling weight of its step-1 events (sampling keeps or
  drops whole sessions); counts are rounded; `estimated` when a counted unit weighs other than 1.
- `conversion_rate`: % of step 1's count; `step_conversion_rate`: % of the step before's count;
  both from the counts shown, 1 decimal, null when the base is 0. `dropoff`: the step before's
  count minus this one's. Step 1 has no step before: its `step_conversion_rate` and `dropoff`
  are null (its `conversion_rate` is 100.0, or null when nobody reached it).

One SQL statement, no recursion, no rows in Python: per step, its matching events (each an
index range of migration 0009b's indexes, read without touching the table on PostgreSQL), and a
CTE of the units that reached it and when, from the step before's.
"""
from typing import Any

from peewee import (
    CTE,
    SQL,
    Expression,
    Select,
    Value,
    fn,
)

from app.analytics.errors import ArgumentError, closest, unknown
from app.analytics.events import event_scope, fetch, is_sampled
from app.analytics.filters import Filters, pattern_condition
from app.analytics.numbers import as_count, percent
from app.analytics.period import Period
from app.analytics.query import matching_sessions
from app.storage.dialect import hours_after, wide
from models import Event, Site

STEP_KINDS = ("page", "goal", "event")
STEP_KEYS = (*STEP_KINDS, "label")
UNITS = ("visit", "visitor")
MIN_STEPS, MAX_STEPS = 2, 8
MAX_LABEL = 100
MAX_NAME = 128  # Event.name's length
MAX_PAGE = 2048
DEFAULT_WINDOW_HOURS = 24
MAX_WINDOW_HOURS = 720  # 30 days
DEFAULT_LABEL = {"page": "Visit", "goal": "Goal", "event": "Event"}
EVENT_TYPE = {"page": "pageview", "goal": "goal", "event": "custom"}


def _is_text(value: Any, longest: int) -> bool:
    """A non-empty string of at most `longest` printable characters (no NUL, control
    character or lone surrogate, which the database driver would refuse)."""
    return isinstance(value, str) and 0 < len(value) <= longest and value.isprintable()


def checked_step(index: int, step: Any, where: str = "") -> dict[str, str]:
    """A step (as `validate` checks each), `where` naming it in a refusal (`steps[index]`)."""
    where = where or f"steps[{index}]"
    if not isinstance(step, dict):
        raise ArgumentError(f"`{where}` must be an object with one of 'page', 'goal' or "
                            "'event' (and an optional 'label').")
    for key in step:
        if key not in STEP_KEYS:
            raise ArgumentError(f"`{where}` has the unknown key '{key}'; valid keys are "
                                "'page', 'goal', 'event' and 'label'." + closest(key, STEP_KEYS))
    kinds = [kind for kind in STEP_KINDS if kind in step]
    if len(kinds) != 1:
        given = " and ".join(f"'{kind}'" for kind in kinds) or "none of them"
        raise ArgumentError(f"`{where}` must have exactly one of 'page', 'goal' or 'event'; "
                            f"it has {given}.")
    kind = kinds[0]
    value = step[kind]
    longest = MAX_PAGE if kind == "page" else MAX_NAME
    if not _is_text(value, longest):
        raise ArgumentError(f"`{where}.{kind}` must be a non-empty string of at most "
                            f"{longest} printable characters.")
    if kind == "page" and not value.startswith("/"):
        raise ArgumentError(f"`{where}.page` must be a URL path starting with '/' (such as "
                            f"'/pricing' or '/blog/*'); got '{value}'.")
    label = step.get("label", f"{DEFAULT_LABEL[kind]} {value}")
    if not _is_text(label, MAX_LABEL):
        raise ArgumentError(f"`{where}.label` must be a non-empty string of at most "
                            f"{MAX_LABEL} printable characters.")
    return {kind: value, "label": label}


def validate(steps: Any, unit: Any = "visit",
             window_hours: Any = DEFAULT_WINDOW_HOURS) -> list[dict[str, str]]:
    """The steps, each with its label (the default one when none was given), or
    an ArgumentError whose one sentence names the bad argument.

    A function rather than a marshmallow schema: an agent needs one sentence naming the step
    (`steps[2]`) and the closest valid key, which marshmallow's per-field message dicts do not
    give. The tool's input schema (the query helper's) declares the shapes:
    steps: list (2-8) of {"page"|"goal"|"event": str, "label"?: str (1-100)};
    unit: "visit" | "visitor" (default "visit"); window_hours: int 1-720 (default 24, visitor
    unit only).
    """
    if unit not in UNITS:
        raise unknown("unit", unit, UNITS)
    if (isinstance(window_hours, bool) or not isinstance(window_hours, int)
            or not 1 <= window_hours <= MAX_WINDOW_HOURS):
        raise ArgumentError(f"`window_hours` must be a whole number of hours from 1 to "
                            f"{MAX_WINDOW_HOURS}; got {window_hours!r}.")
    if not isinstance(steps, list) or not MIN_STEPS <= len(steps) <= MAX_STEPS:
        count = (f"{len(steps)} step{'' if len(steps) == 1 else 's'}"
                 if isinstance(steps, list) else "not a list")
        raise ArgumentError(f"`steps` must be a list of {MIN_STEPS} to {MAX_STEPS} steps "
                            f"such as {{\"page\": \"/pricing\"}} or {{\"goal\": "
                            f"\"Signup\"}}; got {count}.")
    return [checked_step(index, step) for index, step in enumerate(steps)]


def step_events(step: dict[str, str]) -> Expression:
    """The step's matching events, one index range (event_page_steps, event_named_steps):
    for a page, equality, a prefix range for `/prefix/**` (no regular expression to run per
    row), else `query`'s `matches`, whose literal prefix PostgreSQL turns into the range."""
    if "page" in step:
        return (Event.type == "pageview") & pattern_condition(Event.path, step["page"])
    kind = "goal" if "goal" in step else "event"
    return (Event.type == EVENT_TYPE[kind]) & (Event.name == step[kind])


def _reached(events: Any, before: CTE, step: int, windowed: bool) -> CTE:
    """Each unit of `before` that has one of the step's `events` at or after it reached
    `before`'s step (within its window), with the earliest such time."""
    m, p = events.c, before.c
    on = (m.unit == p.unit) & (m.at >= p.at)
    if windowed:
        on &= m.at <= p.deadline
    return (Select([before.join(events, on=on)],
                   [p.unit, fn.MIN(m.at).alias("at"), p.deadline, p.w])
            .group_by(p.unit, p.deadline, p.w).cte(f"step{step}"))


def _visits(site: Site, period: Period, units: Any) -> Select:
    """The session ids among `units` that have a page view in the period (visits)."""
    return (Event.select(Event.session_id)
            .where(event_scope(site.id, period) & (Event.type == "pageview")
                   & Event.session_id.in_(units)))


def _events(site: Site, period: Period, step: dict[str, str], index: int, unit: str,
            filters: Filters) -> Any:
    """The period's events matching `step` (unit, at, w) as a subquery, which the database
    inlines where it is read (no intermediate table). With filters, only the events of the
    visits they select."""
    unit_column = Event.session_id if unit == "visit" else Event.anonymous_id
    where = event_scope(site.id, period) & unit_column.is_null(False) & step_events(step)
    if filters:
        where &= Event.session_id.in_(matching_sessions(site, period, filters))
    return (Event.select(unit_column.alias("unit"), Event.occurred_at.alias("at"),
                         Event.weight.alias("w")).where(where).alias(f"events{index}"))


def funnel(site: Site, period: Period, steps: list[dict[str, str]], unit: str = "visit",
           window_hours: int = DEFAULT_WINDOW_HOURS, filters: Filters = ()) -> dict[str, Any]:
    """The funnel of `steps` (as `validate` returns them) for the site's `unit`s in `period`,
    `filters` as filters.parse_filters(..., visit_only=True) gives them: {"unit",
    "window_hours" (null for visits), "steps": [{"label", "count", "conversion_rate",
    "step_conversion_rate", "dropoff"}], "estimated"}. Call it within reading.reading() (SQLite's
    REGEXP for page patterns)."""
    events = [_events(site, period, step, index, unit, filters)
              for index, step in enumerate(steps)]
    m = events[0].c
    windowed = unit == "visitor"
    first_at = fn.MIN(m.at)
    first = (Select([events[0]], [m.unit, first_at.alias("at"),
                                  (hours_after(first_at, window_hours) if windowed
                                   else Value(None)).alias("deadline"),
                                  fn.MAX(m.w).alias("w")])
             .group_by(m.unit))
    if unit == "visit" and not filters and "page" not in steps[0]:
        # A page step 1 proves a page view, and filtered visits have one; else check.
        first = first.having(m.unit.in_(_visits(site, period, Select(
            [_events(site, period, steps[0], 0, unit, filters)], [SQL("unit")]))))
    reached = [first.cte("step0")]
    for index in range(1, len(steps)):
        reached.append(_reached(events[index], reached[-1], index, windowed))
    base = reached[0].c
    totals = fetch(Select([reached[0]], [
        fn.SUM(wide(base.w)).alias("c0"), fn.MAX(is_sampled(base.w)).alias("sampled"),
        *[Select([cte], [fn.SUM(wide(cte.c.w))]).alias(f"c{index}")
          for index, cte in enumerate(reached) if index],
    ]).with_cte(*reached))[0]
    counts = [as_count(totals[f"c{index}"]) for index in range(len(steps))]
    return {
        "unit": unit,
        "window_hours": window_hours if windowed else None,
        "steps": [_step_result(step["label"], counts, index) for index, step in enumerate(steps)],
        "estimated": bool(totals["sampled"]),
    }


def _step_result(label: str, counts: list[int], index: int) -> dict[str, Any]:
    count = counts[index]
    before = counts[index - 1] if index else None
    return {
        "label": label, "count": count,
        "conversion_rate": percent(count, counts[0]),
        "step_conversion_rate": None if before is None else percent(count, before),
        "dropoff": None if before is None else before - count,
    }

