"""The agent's `filters`: parsed and validated into a tree, compiled into SQL conditions.

A filter list (all must hold) of `[op, dimension, [values...]]` (optionally ending with
`{"case_sensitive": false}`), `["and", [...]]`, `["or", [...]]`, `["not", filter]`, and
`["has_done", filter]` / `["has_not_done", filter]` (vocabulary.FILTER_OPS: a filter on visits,
by a filter on event:* dimensions). Names come from the vocabulary; values are always bound
parameters, never SQL text.

has_done reads the events of the period matching its filter once, as a set of session ids the
visits are looked up in (`IN (subquery)`: PostgreSQL's semi-join, SQLite's ephemeral index): a
correlated EXISTS would read the events of each visit, and the event table has no index by
session.

`matches` patterns (`*` any run of characters but `/`, `**` any run, the whole value) become an
anchored regular expression in the common subset of Python's `re` and PostgreSQL's ARE
(literals escaped, `[^/]*`, `.*`, a leading `(?i)`): PostgreSQL applies it with `~`, SQLite (no
REGEXP of its own) with a Python function registered on its connections
(app.storage.dialect.sqlite_regexp). LIKE was the alternative, but it cannot say "no `/`" without a
second condition per `*`.

Bounds: at most MAX_CONDITIONS conditions (leaves) and MAX_VALUES values in all per `filters`
argument, nested at most MAX_DEPTH levels; every list of conditions and of values is rendered as
a balanced tree (app.storage.dialect.any_of, all_of), so 100 or-ed conditions are one statement on
SQLite too, whose parser overflows on a chain of nested ones.
"""
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from peewee import Case, Expression, fn

from app.analytics.errors import ArgumentError, unknown
from app.analytics.events import event_scope
from app.analytics.vocabulary import FILTER_OPS, Dimension, Row, dimension
from app.storage.dialect import all_of, any_of, position, starts_with
from models import Event

OPS = ("is", "is_not", "contains", "contains_not", "matches", "matches_not")
LOGIC = ("and", "or", "not")
DONE_OPS = tuple(FILTER_OPS)
MAX_CONDITIONS = 100  # leaves of one `filters` argument
MAX_VALUES = 1000  # values of all its leaves together
MAX_VALUE_LENGTH = 1000
MAX_DEPTH = 5
TOO_MANY = ("`filters` may hold at most {conditions} conditions and {values:,} values in all; "
            "this one has more than {limit:,} {what}.")
SHAPE = ('a filter is [op, dimension, [values...]] (optionally ending with '
         '{"case_sensitive": false}), ["and", [filters]], ["or", [filters]], ["not", filter], '
         '["has_done", filter] or ["has_not_done", filter]')


@dataclass(frozen=True)
class Leaf:
    op: str
    dimension: Dimension
    values: tuple[str | None, ...]
    case_sensitive: bool = True

    @property
    def positive(self) -> str:
        return self.op.removesuffix("_not")


@dataclass(frozen=True)
class Logic:
    op: str  # and, or, not
    children: tuple["Node", ...]


# what a has_done node is to the query compiler: a filter on visits
DONE = Dimension("has_done", FILTER_OPS["has_done"], "visit", lambda row: row.visit.session_id)


@dataclass(frozen=True)
class Done:
    """`["has_done", inner]` (or has_not_done): the visits with (without) an event of the
    period matching `inner`, a filter on event:* dimensions. A filter leaf to the compiler (of
    DONE's kind, visit); `site_id` bound before it compiles (bind_site)."""

    op: str
    inner: "Node"
    site_id: int | None = None
    dimension: Dimension = DONE


Node = Leaf | Logic | Done
Filters = tuple[Node, ...]


class _Tally:
    """The conditions and values parsed so far of one `filters` argument: past either bound, the
    parse stops with the sentence that names both."""

    def __init__(self) -> None:
        self.conditions = self.values = 0

    def add(self, values: int) -> None:
        self.conditions += 1
        self.values += values
        for count, limit, what in ((self.conditions, MAX_CONDITIONS, "conditions"),
                                   (self.values, MAX_VALUES, "values")):
            if count > limit:
                raise ArgumentError(TOO_MANY.format(conditions=MAX_CONDITIONS,
                                                    values=MAX_VALUES, limit=limit, what=what))


def parse_filters(raw: Any, *, visit_only: bool = False) -> Filters:
    """The agent's `filters` as a tree; an ArgumentError names what is wrong."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ArgumentError(f"`filters` must be a list of filters; {SHAPE}.")
    tally = _Tally()
    return tuple(_node(item, visit_only, 1, tally) for item in raw)


def _node(item: Any, visit_only: bool, depth: int, tally: _Tally) -> Node:
    if depth > MAX_DEPTH:
        raise ArgumentError(f"`filters` nest deeper than {MAX_DEPTH} levels; flatten them.")
    if not isinstance(item, list) or not item or not isinstance(item[0], str):
        raise ArgumentError(f"Invalid filter {_short(item)}: {SHAPE}.")
    op = item[0]
    if op in ("and", "or"):
        if len(item) != 2 or not isinstance(item[1], list) or not item[1]:
            raise ArgumentError(f"Invalid filter {_short(item)}: [\"{op}\", [filters]] takes a "
                                "non-empty list of filters.")
        return Logic(op, tuple(_node(child, visit_only, depth + 1, tally)
                               for child in item[1]))
    if op == "not":
        if len(item) != 2:
            raise ArgumentError(f"Invalid filter {_short(item)}: [\"not\", filter] takes one "
                                "filter.")
        return Logic(op, (_node(item[1], visit_only, depth + 1, tally),))
    if op in DONE_OPS:
        return _done(item, depth, tally)
    if op not in OPS:
        raise unknown("filter operator", op, OPS + LOGIC + DONE_OPS)
    return _leaf(item, visit_only, tally)


def _done(item: list[Any], depth: int, tally: _Tally) -> Done:
    op = item[0]
    if len(item) != 2:
        raise ArgumentError(f"Invalid filter {_short(item)}: [\"{op}\", filter] takes one "
                            "filter on event:* dimensions.")
    inner = _node(item[1], False, depth + 1, tally)
    for leaf in leaves((inner,)):
        if isinstance(leaf, Done) or leaf.dimension.kind != "event":
            raise ArgumentError(f"Invalid filter {_short(item)}: [\"{op}\", filter] takes a "
                                "filter on event:* dimensions only (event:page, event:goal, "
                                "...); filter visit:* dimensions beside it.")
    return Done(op, inner)


def _leaf(item: list[Any], visit_only: bool, tally: _Tally) -> Leaf:
    op = item[0]
    if len(item) not in (3, 4) or not isinstance(item[2], list):
        raise ArgumentError(f"Invalid filter {_short(item)}: {SHAPE}.")
    found = dimension(item[1], "filter dimension")
    if found.kind == "time":
        raise ArgumentError(f"Invalid filter {_short(item)}: time dimensions cannot be "
                            "filtered; use `from`/`to` or `period`.")
    if visit_only and found.kind != "visit":
        raise ArgumentError(f"Invalid filter {_short(item)}: only visit:* dimensions can "
                            "filter here.")
    values = item[2]
    if not values:
        raise ArgumentError(f"Invalid filter {_short(item)}: give 1 to {MAX_VALUES:,} values.")
    tally.add(len(values))
    for value in values:
        if value is None and op in ("is", "is_not"):
            continue
        if isinstance(value, bool) or not isinstance(value, str | int | float) \
                or len(str(value)) > MAX_VALUE_LENGTH:
            raise ArgumentError(f"Invalid filter {_short(item)}: values are strings or numbers "
                                f"of at most {MAX_VALUE_LENGTH} characters (null only with "
                                "is and is_not).")
    case_sensitive = True
    if len(item) == 4:
        options = item[3]
        if not isinstance(options, dict) or set(options) != {"case_sensitive"} \
                or not isinstance(options["case_sensitive"], bool):
            raise ArgumentError(f"Invalid filter {_short(item)}: the optional last element is "
                                '{"case_sensitive": false}.')
        case_sensitive = options["case_sensitive"]
    return Leaf(op, found, tuple(None if v is None else str(v) for v in values),
                case_sensitive)


def _short(item: Any) -> str:
    text = repr(item)
    return text if len(text) <= 80 else text[:77] + "..."


def leaves(filters: Filters) -> list[Leaf | Done]:
    """The conditions of `filters`: its leaves, and its has_done nodes (whose own filter is
    theirs, not the query's)."""
    found: list[Leaf | Done] = []
    for node in filters:
        found.extend(leaves(node.children) if isinstance(node, Logic) else [node])
    return found


def bind_site(filters: Filters, site_id: int) -> Filters:
    """`filters` with their has_done nodes reading the site `site_id`'s events; every other
    node the same object (conversion_rate's `keep` knows its goal leaf by identity)."""

    def bound(node: Node) -> Node:
        if isinstance(node, Done):
            return Done(node.op, node.inner, site_id)
        if isinstance(node, Logic) and any(not isinstance(leaf, Leaf)
                                           for leaf in leaves(node.children)):
            return Logic(node.op, tuple(bound(child) for child in node.children))
        return node

    return tuple(bound(node) for node in filters)


def kinds(filters: Filters) -> set[str]:
    return {leaf.dimension.kind for leaf in leaves(filters)}


# --- Compiling -----------------------------------------------------------------------------

def pattern_regex(pattern: str) -> str:
    """A `matches` pattern as an anchored regular expression: `**` any run, `*` any run
    without `/`, everything else literal."""
    parts = []
    for index, chunk in enumerate(pattern.split("**")):
        if index:
            parts.append(".*")
        parts.append("[^/]*".join(re.escape(piece) for piece in chunk.split("*")))
    return "^" + "".join(parts) + "$"


def pattern_condition(column: Any, pattern: str, case_sensitive: bool = True) -> Expression:
    """`column` matches the `matches` pattern: equality for a pattern without `*`, a prefix
    range for `literal**` (the common `/blog/**`: an index range instead of a regular expression
    run on every page row), else the regular expression (pattern_regex)."""
    if case_sensitive and "*" not in pattern:
        return column == pattern
    head = pattern.removesuffix("**")
    # a last character from U+D7FF on has no next one that is not a surrogate (starts_with's
    # upper bound): a regular expression then
    if case_sensitive and head and "*" not in head and ord(head[-1]) < 0xD7FF:
        return starts_with(column, head)
    return regexp(column, pattern_regex(pattern), case_sensitive)


def regexp(column: Any, regex: str, case_sensitive: bool = True) -> Expression:
    """`column` matches `regex`: PostgreSQL's `~`, SQLite's REGEXP (app.storage.dialect registers
    it)."""
    return column.regexp(regex if case_sensitive else "(?i)" + regex)


def _holds(condition: Any) -> Expression:
    """1 where `condition` is true, 0 where false or NULL: negations then include NULLs."""
    return Case(None, [(condition, 1)], 0)


def _positive(leaf: Leaf, value: Any) -> Any:
    column = value if leaf.case_sensitive else fn.lower(value)
    texts = [v if leaf.case_sensitive else v.lower() for v in leaf.values if v is not None]
    if leaf.positive == "is":
        conditions = [column.in_(texts)] if texts else []
        if None in leaf.values:
            conditions.append(value.is_null())
    elif leaf.positive == "contains":
        conditions = [position(column, text) > 0 for text in texts]
    else:
        conditions = [pattern_condition(value, pattern, leaf.case_sensitive)
                      for pattern in leaf.values if pattern is not None]
    return any_of(conditions)


def compile_filters(filters: Filters, row: Row,
                    keep: Callable[[Any], bool] = lambda _leaf: True) -> Expression | None:
    """The condition on `row` (event and visit columns) that all `filters` hold; leaves for
    which `keep` is false are left out (conversion_rate's denominator drops the goal)."""
    conditions = [c for c in (_compile(node, row, keep) for node in filters) if c is not None]
    return all_of(conditions) if conditions else None


def _done_condition(node: Done, row: Row) -> Expression:
    """The visit `row.visit` has (has not) an event of the period matching `node.inner`."""
    if node.site_id is None:
        raise RuntimeError("a has_done filter compiled before bind_site")
    sessions = row.sessions(node.inner) if row.sessions is not None else None
    if sessions is None:
        matching = compile_filters((node.inner,), Row(Event, None, row.period))
        sessions = Event.select(Event.session_id).where(
            event_scope(node.site_id, row.period) & Event.session_id.is_null(False) & matching)
    found = row.visit.session_id.in_(sessions)
    return found if node.op == "has_done" else ~found


def _compile(node: Node, row: Row, keep: Callable[[Any], bool]) -> Any:
    if isinstance(node, Done):
        return _done_condition(node, row) if keep(node) else None
    if isinstance(node, Leaf):
        if not keep(node):
            return None
        if node.op == "is_not" and node.values == (None,):
            # IS NULL is never NULL itself: its plain negation, which the planner estimates
            # (as _holds(...) == 0 it took 1 row in 200: 3 of 20,000 goals, and a nested loop
            # of 20,000 x 20,000 sessions ran past the time limit, PostgreSQL 10 M)
            return node.dimension.sql(row).is_null(False)
        positive = _positive(node, node.dimension.sql(row))
        if not node.op.endswith("_not"):
            # as it is, so that the planner estimates it from the column's statistics; a
            # NULL is no match, in a WHERE as in `and` and `or` (`not` turns it into 0)
            return positive
        return _holds(positive) == 0
    children = [c for c in (_compile(child, row, keep) for child in node.children)
                if c is not None]
    if not children:
        return None
    if node.op == "not":
        return _holds(children[0]) == 0
    return all_of(children) if node.op == "and" else any_of(children)

