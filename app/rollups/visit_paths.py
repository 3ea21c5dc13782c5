"""Each visit's path head (models.Visit.path_head, path_end_at, path_weight): its first
HEAD_NODES nodes, each a page view (its path) or a goal ("goal:<name>"), in time order (ties by
storage order), each run of one repeated value folded into one, as `paths` defines a visit's
path (app.analytics.paths); the time of its last node and the largest weight of its nodes.

Why: paths from the visit's entry read no further than the head, so they read one row per
visit and the database groups the visits by head; from the events, the period's page views and
goals were ordered and folded per visit (3.9 s at 10 M events over 30 days; bench/README.md).

How it is kept (Python, not SQL, in one place: `_fold`): the merge (app.rollups.merging) hands
the events of its id range to `merge`, which extends each session's stored head by its new
nodes when they come after the stored ones (every merged event has a larger id than those
merged before, so a node at the same time comes after). A node earlier than the stored last one
(a batch stored late) cannot be placed from the head: that session's head is derived again from
all its events (`_derived`, a rare index range), as is a head-less session whose events began
before its new nodes (a visit merged by the version before migration 0021). Rebuilds
(visits.rebuild: erasure, pruning, backfill, the benchmark's seeding) derive the heads of the
visits they rebuild from their events (`rebuild`). SQLite 3.40 has no ordered aggregate
(string_agg ... ORDER BY), so a SQL derivation would have needed two spellings and a second
fold for the merge. What it adds to a merge is in bench/README.md ("Merging the rollups").

The head is a JSON array: any path or goal name is a value, with no separator to escape.
"""
import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from peewee import Case, Value, fn

from app.rollups.mark import mark
from app.storage.dialect import current
from models import Event, Visit, database
from models.event import readable_through

HEAD_NODES = 10  # app.analytics.paths.MAX_STEPS: a path from the entry reads no further
GOAL_PREFIX = "goal:"
NODE_TYPES = ("pageview", "goal")
STORE_ROWS = 2_000  # heads written per statement (10,000 parameters: SQLite allows 32,766)
# (value, at, weight) of one node; a session's new nodes in order
Node = tuple[str, datetime, float]


def node_value(event: Any = Event) -> Any:
    """SQL: a node's value (a page view's path, "goal:<name>" for a goal), as paths reads it."""
    return Case(None, [(event.type == "pageview", fn.COALESCE(event.path, ""))],
                Value(GOAL_PREFIX).concat(fn.COALESCE(event.name, "")))


def _fold(head: list[str], values: Iterable[str]) -> list[str]:
    """`head` extended by `values`, repeats folded, at most HEAD_NODES."""
    for value in values:
        if len(head) >= HEAD_NODES:
            break
        if not head or head[-1] != value:
            head.append(value)
    return head


def encoded(head: list[str]) -> str:
    return json.dumps(head, ensure_ascii=False, separators=(",", ":"))


def decoded(text: str) -> list[str]:
    return json.loads(text)


def _node_rows(scope: Any) -> Any:
    """(site_id, session_id, value, occurred_at, weight) of the nodes of `scope` (a condition
    on Event), in each session's order."""
    return (Event.select(Event.site_id, Event.session_id, node_value(), Event.occurred_at,
                         Event.weight)
            .where(scope & Event.session_id.is_null(False) & Event.type.in_(NODE_TYPES))
            .order_by(Event.site_id, Event.session_id, Event.occurred_at, Event.id)
            .bind(database).tuples())


def _sessions(rows: Iterable[tuple[Any, ...]]) -> Iterator[tuple[tuple[int, str], list[Node]]]:
    """The rows of _node_rows grouped per session: ((site_id, session_id), its nodes)."""
    key, nodes = None, []
    for site_id, session_id, value, at, weight in rows:
        if (site_id, session_id) != key:
            if nodes:
                yield key, nodes
            key, nodes = (site_id, session_id), []
        nodes.append((value, at, float(weight)))
    if nodes:
        yield key, nodes


def _head(nodes: list[Node], head: list[str] | None = None, weight: float = 0.0
          ) -> tuple[str, datetime, float]:
    """(path_head, path_end_at, path_weight) of `head` (none: empty) extended by `nodes`."""
    folded = _fold(list(head or []), (value for value, _, _ in nodes))
    return encoded(folded), nodes[-1][1], max(weight, *(node[2] for node in nodes))


def _streamed(query: Any) -> Iterator[tuple[Any, ...]]:
    """The rows of `query` without holding them all (a full rebuild reads every page view):
    a server-side cursor on PostgreSQL; SQLite's cursor steps through the rows anyway."""
    sql, params = query.sql()
    cursor = current().streaming_cursor()
    cursor.execute(sql, params)
    try:
        while rows := cursor.fetchmany(5_000):
            yield from rows
    finally:
        cursor.close()


def _store(heads: list[tuple[int, str, str, datetime, float]]) -> None:
    """Write heads (site_id, session_id, path_head, path_end_at, path_weight) to their visit
    rows, STORE_ROWS per statement: one UPDATE ... FROM a VALUES list, its text written here
    (Peewee's ValuesList rendered 5,000 heads in about 150 ms, seven times what PostgreSQL then
    took to write them)."""
    param = database.param
    for start in range(0, len(heads), STORE_ROWS):
        chunk = heads[start:start + STORE_ROWS]
        values = ", ".join([f"({', '.join([param] * 5)})"] * len(chunk))
        database.execute_sql(
            f"WITH heads (site_id, session_id, head, end_at, weight) AS (VALUES {values}) "
            "UPDATE visit SET path_head = heads.head, path_end_at = heads.end_at, "
            "path_weight = heads.weight FROM heads "
            "WHERE visit.site_id = heads.site_id AND visit.session_id = heads.session_id",
            [value for head in chunk for value in head])


def rebuild(scope: Any) -> None:
    """Derive the heads of the sessions whose events match `scope` (a condition on Event),
    from those events; within visits.rebuild, after their visit rows were derived."""
    pending: list[tuple[int, str, str, datetime, float]] = []
    for (site_id, session_id), nodes in _sessions(_streamed(_node_rows(scope))):
        pending.append((site_id, session_id, *_head(nodes)))
        if len(pending) >= STORE_ROWS * 10:
            _store(pending)
            pending = []
    _store(pending)


def _stored(after: int, through: int) -> dict[tuple[int, str], tuple[Any, ...]]:
    """{(site, session): (path_head, path_end_at, path_weight, started_at, ended_at)} of the
    visit rows of the sessions with a node among the events in (after, through]: one
    statement (IN lists of 500 sessions took 46 of a 50,000-event merge's 254 ms here)."""
    sessions = (Event.select(Event.site_id, Event.session_id)
                .where((Event.id > after) & (Event.id <= through)
                       & Event.session_id.is_null(False) & Event.type.in_(NODE_TYPES))
                .distinct().alias("merged_sessions"))
    # a join, each visit row looked up by its key (as a row-value IN, SQLite scanned the table)
    rows = (Visit.select(Visit.site_id, Visit.session_id, Visit.path_head, Visit.path_end_at,
                         Visit.path_weight, Visit.started_at, Visit.ended_at)
            .join(sessions, on=(Visit.site_id == sessions.c.site_id)
                  & (Visit.session_id == sessions.c.session_id)).tuples())
    return {(row[0], row[1]): row[2:] for row in rows}


def _derived(site_id: int, session_id: str, started_at: datetime, ended_at: datetime,
             through: int) -> list[Node]:
    """All the nodes of one session up to the id `through`: its events lie between its visit
    row's first and last event times, an index range."""
    scope = ((Event.site_id == site_id) & (Event.session_id == session_id)
             & Event.occurred_at.between(started_at, ended_at) & (Event.id <= through))
    return [node for _, nodes in _sessions(_node_rows(scope)) for node in nodes]


def merge(after: int, through: int) -> None:
    """Extend the heads by the nodes of the events whose ids are in (after, through], within
    the merge's transaction, after the visit upsert. Outside any read's bound on the events
    (models.event.readable_through), as the merge's own statements are rendered."""
    token = readable_through.set(None)
    try:
        _merge(after, through)
    finally:
        readable_through.reset(token)


def _merge(after: int, through: int) -> None:
    new = list(_sessions(_node_rows((Event.id > after) & (Event.id <= through))))
    if not new:  # heartbeats, clicks ...: no head changes, no visit row to read
        return
    stored = _stored(after, through)
    heads = []
    for key, nodes in new:
        head, end_at, weight, started_at, ended_at = stored[key]
        if head is None and started_at >= nodes[0][1]:  # its first events: a new head
            heads.append((*key, *_head(nodes)))
        elif head is not None and nodes[0][1] >= end_at:  # after the stored nodes: on
            heads.append((*key, *_head(nodes, decoded(head), weight)))
        else:  # before a stored node, or after events stored without a head (a visit
            # merged by the version before 0021): derived again from all its events
            every = _derived(*key, started_at, ended_at, through)
            heads.append((*key, *_head(every)))
    _store(heads)


def derive_every_head() -> None:
    """The upgrade task `visit_paths` (migration 0021): every visit's head, from its events up
    to the rollups' mark."""
    current().no_statement_timeout()
    rebuild(Event.id <= mark())
