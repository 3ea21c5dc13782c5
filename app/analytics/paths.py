"""Paths: where visits go after a page or goal, or come from before it (docs/AGENTS.md, `paths`,
states the definitions for agents).

A visit's path is its page views (their `event:page`) and goals (`goal:<name>`) in time order
(ties by storage order, as the visit table's entry and exit), each run of one repeated value
folded into one. Forward from the visit's first node matching `start`, backward from its last
node matching `end`, or forward from `(entry)`; `(exit)` after a visit's last node (forward),
`(entry)` before its first (backward), then nothing.

What it reads, and why: the period's page views and goals of `query`'s visits (a session with a
page view in the period, `filters` as in `funnel`). From the entry, a path reads no further than
a visit's first MAX_STEPS nodes, which the visit table keeps (models.Visit.path_head,
app.rollups.visit_paths): the visits inside the period are their heads, grouped by the database
(one row per distinct head), and only the few across its edges (period_rows.edges) are read from
their events: 3.9 s -> 0.55 s at 10 M events over 30 days (bench/README.md). From a page or goal
the anchor may lie deeper than any head, so the events are read, narrowed to the sessions that
have a node matching it (an index range as a funnel step's: funnel.step_events) and ordered by
the database; Python folds them into paths. Either way the visits are counted per distinct
path, which is what the steps, links and top paths are summed from.
A visit weighs the largest weight of its nodes (sampling keeps or drops whole sessions).
"""
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from peewee import fn

from app.analytics.errors import ArgumentError
from app.analytics.events import event_scope, is_sampled
from app.analytics.filters import Filters, pattern_regex
from app.analytics.funnel import checked_step, step_events
from app.analytics.numbers import as_count, percent
from app.analytics.period import Period
from app.analytics.period_rows import edges, inside_visits
from app.analytics.query import matching_sessions
from app.rollups import visit_paths
from app.storage.dialect import wide
from app.web.schema import whole_number
from models import Event, Site, Visit, database

DEFAULT_STEPS, MAX_STEPS = 3, 10
DEFAULT_LIMIT, MAX_LIMIT = 10, 20
ENTRY, EXIT, OTHER = "(entry)", "(exit)", "(other)"
GOAL_PREFIX = visit_paths.GOAL_PREFIX


def _step(name: str, raw: Any) -> dict[str, str]:
    if not isinstance(raw, dict) or "event" in raw or "label" in raw:
        raise ArgumentError(f"`{name}` must be a page ({{\"page\": \"/pricing\"}}, a path or "
                            f"pattern) or a goal ({{\"goal\": \"Signup\"}}): a path's steps are "
                            f"page views and goals only.")
    return {key: value for key, value in checked_step(0, raw, name).items() if key != "label"}


def _bounded(name: str, raw: Any, default: int, highest: int) -> int:
    if raw is None:
        return default
    value = whole_number(raw)
    if value is None or not 1 <= value <= highest:
        raise ArgumentError(f"`{name}` must be a whole number from 1 to {highest}; got {raw!r}.")
    return value


def validate(arguments: dict[str, Any]) -> dict[str, Any]:
    """start or end (or neither), steps and limit checked, with their defaults, or an
    ArgumentError naming the bad one."""
    start, end = arguments.get("start"), arguments.get("end")
    if start is not None and end is not None:
        raise ArgumentError("Give at most one of `start` (paths forward from it) and `end` "
                            "(paths backward from it); neither: forward from the visit's entry.")
    return {"start": None if start is None else _step("start", start),
            "end": None if end is None else _step("end", end),
            "steps": _bounded("steps", arguments.get("steps"), DEFAULT_STEPS, MAX_STEPS),
            "limit": _bounded("limit", arguments.get("limit"), DEFAULT_LIMIT, MAX_LIMIT)}


def anchor_value(step: dict[str, str] | None) -> str:
    if step is None:
        return ENTRY
    return step["page"] if "page" in step else GOAL_PREFIX + step["goal"]


def _matcher(step: dict[str, str]) -> Any:
    """Whether a node (is_page, value) matches `step`, as funnel.step_events selects events."""
    if "goal" in step:
        wanted = GOAL_PREFIX + step["goal"]
        return lambda is_page, value: not is_page and value == wanted
    regex = re.compile(pattern_regex(step["page"]), re.DOTALL)
    return lambda is_page, value: is_page and regex.match(value) is not None


def _visit_nodes(site: Site, period: Period, anchor: dict[str, str] | None,
                 filters: Filters, within: Any = None
                 ) -> Iterator[tuple[list[tuple[bool, str]], float]]:
    """Per visit of the period (with a node matching `anchor`; `within`, a condition on Event,
    narrows the events read), its folded nodes (is_page, value) in order and its weight. The
    database spells each node's value and orders the rows; they arrive as tuples and are
    folded in one pass per visit (from dicts, with a value spelled per row in Python, the fold
    was 6 of the 9 s of paths from the entry at 10 M events)."""
    scope = event_scope(site.id, period) & Event.session_id.is_null(False)
    if within is not None:
        scope &= within
    where = scope & Event.type.in_(visit_paths.NODE_TYPES)
    visits = (Event.select(Event.session_id)
              .where(scope & (step_events(anchor) if anchor else Event.type == "pageview")))
    where &= Event.session_id.in_(visits)
    if filters:
        where &= Event.session_id.in_(matching_sessions(site, period, filters))
    rows = (Event.select(Event.session_id, Event.type == "pageview", visit_paths.node_value(),
                         Event.weight).where(where)
            .order_by(Event.session_id, Event.occurred_at, Event.id).bind(database).tuples())
    session, nodes, weight, has_page = None, [], 0.0, False
    for session_id, page, node, node_weight in rows:
        if session_id != session:
            if has_page:
                yield nodes, float(weight)
            session, nodes, weight, has_page = session_id, [], 0.0, False
        page = bool(page)  # SQLite: 0 or 1
        if not nodes or nodes[-1][1] != node:
            nodes.append((page, node))
        has_page = has_page or page
        if node_weight > weight:
            weight = node_weight
    if has_page:
        yield nodes, float(weight)


def _walked(site: Site, period: Period, start: dict[str, str] | None,
            end: dict[str, str] | None, steps: int, filters: Filters
            ) -> Iterator[tuple[tuple[str, ...], float, bool]]:
    """(sequence, weight, sampled) of the period's visits that reach the anchor, a sequence
    once or more (the weight then summed over its visits). From the entry, the visits inside
    the period are their visit rows' heads (app.rollups.visit_paths), grouped by the database,
    and only the few across its edges are read from their events."""
    matches = [None if step is None else _matcher(step) for step in (start, end)]
    within = None
    if start is None and end is None:
        yield from _entry_heads(site, period, steps, filters)
        within = edges(site, period).events
        if within is None:
            return
    for nodes, weight in _visit_nodes(site, period, end if end is not None else start,
                                      filters, within):
        sequence = _sequence(nodes, matches[0], matches[1], steps)
        if sequence is not None:
            yield sequence, weight, weight != 1


def _entry_heads(site: Site, period: Period, steps: int, filters: Filters
                 ) -> Iterator[tuple[tuple[str, ...], float, bool]]:
    """The paths from the entry of the visits inside the period, from their heads."""
    where = inside_visits(site, period) & Visit.path_head.is_null(False)
    if filters:
        where &= Visit.session_id.in_(matching_sessions(site, period, filters))
    rows = (Visit.select(Visit.path_head, fn.SUM(wide(Visit.path_weight)),
                         fn.MAX(is_sampled(Visit.path_weight)))
            .where(where).group_by(Visit.path_head).tuples())
    for head, weight, sampled in rows:
        yield _cut(visit_paths.decoded(head), steps, EXIT), float(weight), bool(sampled)


def _sequence(nodes: list[tuple[bool, str]], start: Any, end: Any, steps: int
              ) -> tuple[str, ...] | None:
    """The values after (or before) the anchor, up to `steps`, ending with (exit) or (entry)
    when the visit ends first; None when the visit does not reach the anchor."""
    values = [value for _, value in nodes]
    if end is not None:
        at = [index for index, (page, value) in enumerate(nodes) if end(page, value)]
        if not at:
            return None
        following = values[:at[-1]][::-1]
        closing = ENTRY
    else:
        if start is None:
            index = -1
        else:
            at = [index for index, (page, value) in enumerate(nodes) if start(page, value)]
            if not at:
                return None
            index = at[0]
        following = values[index + 1:]
        closing = EXIT
    return _cut(following, steps, closing)


def _cut(following: list[str], steps: int, closing: str) -> tuple[str, ...]:
    """The first `steps` values, or all of them and `closing` when the visit ends first."""
    return tuple(following[:steps]) if len(following) >= steps else (*following, closing)


def paths(site: Site, period: Period, start: dict[str, str] | None = None,
          end: dict[str, str] | None = None, steps: int = DEFAULT_STEPS,
          limit: int = DEFAULT_LIMIT, filters: Filters = ()) -> dict[str, Any]:
    """The paths of the period's visits from (or to) the anchor, as docs/AGENTS.md describes
    the result. Call it within reading.reading() (SQLite's REGEXP for page patterns)."""
    anchor = end if end is not None else start
    # Visits counted per distinct path: everything after reads those, not each visit.
    counted: Counter[tuple[str, ...]] = Counter()
    sampled = False
    for sequence, weight, weighted in _walked(site, period, start, end, steps, filters):
        counted[sequence] += weight
        sampled = sampled or weighted
    walked = list(counted.items())
    kept = [_kept(walked, step, limit) for step in range(steps)]
    shown = [([value if value in (ENTRY, EXIT) or value in kept[index] else OTHER
               for index, value in enumerate(sequence)], weight) for sequence, weight in walked]
    total = sum(weight for _, weight in walked)
    anchor_name = anchor_value(anchor)
    return {
        "timezone": period.timezone, "direction": "backward" if end is not None else "forward",
        "anchor": anchor_name, "visits": as_count(total),
        "steps": _steps(shown, steps, total),
        "links": _links(shown, anchor_name),
        "top_paths": _top_paths(shown, limit),
        "estimated": sampled,
    }


def _kept(walked: list[tuple[tuple[str, ...], float]], step: int, limit: int) -> set[str]:
    """The `limit` values reached by the most visits at `step` (ties: ascending)."""
    reached: Counter[str] = Counter()
    for sequence, weight in walked:
        if len(sequence) > step and sequence[step] not in (ENTRY, EXIT):
            reached[sequence[step]] += weight
    return {value for value, _ in sorted(reached.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]}


def _ordered(counts: Counter[Any]) -> list[tuple[Any, int]]:
    """Counts rounded, most first, ties by value."""
    return sorted(((key, as_count(weight)) for key, weight in counts.items()),
                  key=lambda kv: (-kv[1], kv[0]))


def _steps(shown: list[tuple[list[str], float]], steps: int, total: float
           ) -> list[dict[str, Any]]:
    result = []
    for step in range(steps):
        counts: Counter[str] = Counter()
        for sequence, weight in shown:
            if len(sequence) > step:
                counts[sequence[step]] += weight
        if not counts:
            break
        ordered = _ordered(counts)
        values = [pair for pair in ordered if pair[0] not in (OTHER, ENTRY, EXIT)] + [
            pair for pair in ordered if pair[0] in (OTHER,)] + [
            pair for pair in ordered if pair[0] in (ENTRY, EXIT)]
        result.append({"step": step + 1, "values": [
            {"value": value, "visits": visits, "share": percent(visits, as_count(total))}
            for value, visits in values]})
    return result


def _links(shown: list[tuple[list[str], float]], anchor: str) -> list[dict[str, Any]]:
    counts: Counter[tuple[int, str, str]] = Counter()
    for sequence, weight in shown:
        for step, value in enumerate(sequence):
            counts[(step + 1, sequence[step - 1] if step else anchor, value)] += weight
    links = [{"step": step, "from": origin, "to": to, "visits": as_count(weight)}
             for (step, origin, to), weight in counts.items()]
    return sorted(links, key=lambda link: (link["step"], -link["visits"], link["from"],
                                           link["to"]))


def _top_paths(shown: list[tuple[list[str], float]], limit: int) -> list[dict[str, Any]]:
    counts: Counter[tuple[str, ...]] = Counter()
    for sequence, weight in shown:
        counts[tuple(sequence)] += weight
    return [{"path": list(path), "visits": visits}
            for path, visits in _ordered(counts)[:limit]]
