"""Writing accepted events: one transaction, and on PostgreSQL one statement, per request.

On PostgreSQL a batch is stored by a single data-modifying CTE: the batch row is inserted with
ON CONFLICT DO NOTHING, and the events and the usage shard are inserted *from* its RETURNING
row, so a duplicate batch inserts nothing at all, atomically, even when two copies race; for a
duplicate the same statement reads the stored copy's event count, which the answer repeats. The
events travel as one JSON array parameter unpacked by jsonb_to_recordset: one round trip, no
query per event, and almost no Python work per event; the statement is prepared once per
connection (app.db.PreparedStatement). Peewee's query builder has no way to
spell a column definition list (`AS e(type text, ...)`), hence the hand-written statement,
kept to this module. SQLite (the zero-setup default) gets the same effect with Peewee queries
in one transaction. The request's visit context (app.visit.context: country, device, ...) is
the same for every event of a request, so it travels as statement parameters (a group's, as
fields of each batch), not once per event. The same statement merges each stored batch into
its session's visit row (app.visits; {} for a batch without a session: no row), its visit's
page rows (app.visit_pages) and the quarter-hour counts of its events (app.event_slots); the
last two it makes itself from the rows the event insert returns, so a batch carries only its
events and its visit summary.
"""
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

import orjson
from peewee import SQL, IntegrityError, Table

from app import event_slots, visit_pages, visits
from app.db import PreparedStatement, is_postgres
from app.visit.context import NO_CONTEXT, RequestContext
from models import Batch, Event, Usage, database

# The batch's visit summary (app.visits.summary, a JSON object; null without a session)
# merged into its visit row, only when the batch was stored now.
BATCH_VISIT_UPSERT = visits.upsert_sql(postgres=True).format(rows=f"""SELECT {", ".join(
    f"v.{column}" for column in visits.COLUMNS)}
    FROM new_batch, jsonb_populate_record(NULL::visit, $21) AS v
    WHERE v.session_id IS NOT NULL""")
# A group's visit rows: the sums over its stored batches of one session, the entry columns of
# the batch with the earliest page view, the exit columns of the one with the latest (ties: the
# later batch in the group), in (site, session) order like the other upserts.
GROUP_VISIT_UPSERT = visits.upsert_sql(postgres=True).format(rows=f"""SELECT {", ".join(
    f"n.{column}" if column in visits.ENTRY_COLUMNS
    else f"x.{column}" if column in visits.EXIT_COLUMNS else f"v.{column}"
    for column in visits.COLUMNS)}
    FROM visit_sums AS v
    LEFT JOIN visit_entries AS n USING (site_id, session_id)
    LEFT JOIN visit_exits AS x USING (site_id, session_id)
    ORDER BY v.site_id, v.session_id""")
# Whether a group's batches of one session carry one anonymous id (or none) and one weight.
GROUP_UNIFORM = """(bool_and(uniform) AND min(weight) = max(weight)
               AND (count(visitor) = 0 OR (count(visitor) = count(*)
                                           AND min(visitor) = max(visitor))))"""
# Per-event columns; the batch-wide ones come from BatchRows.
EVENT_COLUMNS = ("type", "name", "page_url", "page_title", "referrer", "properties",
                 "client_ts", "occurred_at", "path", "hostname", "source", "channel",
                 "referrer_url", "utm_source", "utm_medium", "utm_campaign", "utm_content",
                 "utm_term")

# The columns of the events just stored that their page rows and quarter-hour rows are made of.
STORED_COLUMNS = ("site_id", "batch_id", "session_id", "anonymous_id", "weight", "type",
                  "occurred_at", "path", "page_url")
STORED_RETURNING = f"RETURNING {', '.join(STORED_COLUMNS)}"


def _rollups(pages: str, slots: str) -> str:
    """The CTEs that merge the page rows (app.visit_pages) and the quarter-hour rows
    (app.event_slots) of the events just stored (the CTE `stored`): `pages` and `slots` are
    their rows, as the rebuild derives them from stored events (visit_pages.derived,
    event_slots.derived), in key order. A batch carries no rows of its own: sending them as
    JSON and parsing them cost more than deriving them from the events PostgreSQL has just
    converted."""
    return f"""), paged AS (
    {visit_pages.UPSERT_SQL.format(rows=pages)}
), slotted AS (
    {event_slots.UPSERT_SQL.format(rows=slots)}
"""


def _batch_statement(rollups: str) -> PreparedStatement:
    return PreparedStatement(
        name="egis_store_batch",
        parameters=(("site_id", "integer"), ("batch_key", "text"), ("count", "integer"),
                    ("received_at", "timestamp"), ("session_id", "text"), ("anonymous_id", "text"),
                    ("user_id", "text"), ("sent_ts", "bigint"), ("weight", "real"),
                    ("events", "jsonb"), ("period", "text"), ("shard", "smallint"),
                    ("country", "text"), ("device", "text"), ("browser", "text"),
                    ("browser_version", "text"), ("os", "text"), ("os_version", "text"),
                    ("language", "text"), ("screen", "text"), ("visit", "jsonb")),
        body=f"""
WITH new_batch AS (
    INSERT INTO batch (site_id, batch_key, event_count, received_at)
    VALUES ($1, $2, $3, $4)
    ON CONFLICT (site_id, batch_key) DO NOTHING
    RETURNING id
), stored AS (
    INSERT INTO event (site_id, batch_id, session_id, anonymous_id, user_id, type, name,
                       page_url, page_title, referrer, properties, client_ts, sent_ts,
                       occurred_at, received_at, weight, path, hostname, source, channel,
                       referrer_url, utm_source, utm_medium, utm_campaign, utm_content,
                       utm_term, country, device, browser, browser_version, os, os_version,
                       language, screen)
    SELECT $1, new_batch.id, $5, $6, $7, e.type, e.name, e.page_url, e.page_title, e.referrer,
           e.properties, e.client_ts, $8, e.occurred_at, $4, $9, e.path, e.hostname,
           e.source, e.channel, e.referrer_url, e.utm_source, e.utm_medium, e.utm_campaign,
           e.utm_content, e.utm_term, $13, $14, $15, $16, $17, $18, $19, $20
    FROM new_batch, jsonb_to_recordset($10) AS e(
        type text, name text, page_url text, page_title text, referrer text,
        properties jsonb, client_ts bigint, occurred_at timestamp, path text, hostname text,
        source text, channel text, referrer_url text, utm_source text, utm_medium text,
        utm_campaign text, utm_content text, utm_term text)
    {STORED_RETURNING}
), counted AS (
    INSERT INTO usage (site_id, period, shard, events)
    SELECT $1, $11, $12, $3 FROM new_batch WHERE $3 > 0
    ON CONFLICT (site_id, period, shard) DO UPDATE SET events = usage.events + EXCLUDED.events
), visited AS (
    {BATCH_VISIT_UPSERT}
{rollups})
SELECT EXISTS (SELECT FROM new_batch) AS stored,
       -- For a resend, the stored copy's count; looked up only when nothing was inserted.
       CASE WHEN NOT EXISTS (SELECT FROM new_batch) THEN
           (SELECT event_count FROM batch WHERE site_id = $1 AND batch_key = $2) END
""")


# Several requests' batches in one statement (app.tracking.writer): the same steps as above,
# over a JSON array of batches. Batch rows and usage rows are written in one order (site, key;
# site, period, shard) so that two workers' concurrent groups lock them in the same order and
# cannot deadlock; a shard row gets one upsert per group, with the group's sum.
def _group_statement(rollups: str) -> PreparedStatement:
    return PreparedStatement(
        name="egis_store_group",
        parameters=(("batches", "jsonb"),),
        body=f"""
WITH input AS (
    SELECT * FROM jsonb_to_recordset($1) AS b(
        position integer, site_id integer, batch_key text, count integer,
        received_at timestamp, session_id text, anonymous_id text, user_id text, sent_ts bigint,
        weight real, events jsonb, period text, shard smallint, country text, device text,
        browser text, browser_version text, os text, os_version text, language text,
        screen text, visit jsonb)
), new_batch AS (
    INSERT INTO batch (site_id, batch_key, event_count, received_at)
    SELECT site_id, batch_key, count, received_at FROM input ORDER BY site_id, batch_key
    ON CONFLICT (site_id, batch_key) DO NOTHING
    RETURNING id, site_id, batch_key
), kept AS (
    -- In the group's order, which the events' ids follow: the visit merge breaks ties of
    -- time by it (app.visits), as rebuild does by the event id.
    SELECT input.*, new_batch.id AS batch_id
    FROM input JOIN new_batch USING (site_id, batch_key) ORDER BY input.position
), stored AS (
    INSERT INTO event (site_id, batch_id, session_id, anonymous_id, user_id, type, name,
                       page_url, page_title, referrer, properties, client_ts, sent_ts,
                       occurred_at, received_at, weight, path, hostname, source, channel,
                       referrer_url, utm_source, utm_medium, utm_campaign, utm_content,
                       utm_term, country, device, browser, browser_version, os, os_version,
                       language, screen)
    SELECT k.site_id, k.batch_id, k.session_id, k.anonymous_id, k.user_id, e.type, e.name,
           e.page_url, e.page_title, e.referrer, e.properties, e.client_ts, k.sent_ts,
           e.occurred_at, k.received_at, k.weight, e.path, e.hostname, e.source, e.channel,
           e.referrer_url, e.utm_source, e.utm_medium, e.utm_campaign, e.utm_content,
           e.utm_term, k.country, k.device, k.browser, k.browser_version, k.os, k.os_version,
           k.language, k.screen
    FROM kept AS k, jsonb_to_recordset(k.events) AS e(
        type text, name text, page_url text, page_title text, referrer text,
        properties jsonb, client_ts bigint, occurred_at timestamp, path text, hostname text,
        source text, channel text, referrer_url text, utm_source text, utm_medium text,
        utm_campaign text, utm_content text, utm_term text)
    {STORED_RETURNING}
), counted AS (
    INSERT INTO usage (site_id, period, shard, events)
    SELECT site_id, period, shard, sum(count) FROM kept WHERE count > 0
    GROUP BY site_id, period, shard ORDER BY site_id, period, shard
    ON CONFLICT (site_id, period, shard) DO UPDATE SET events = usage.events + EXCLUDED.events
), visit_parts AS (
    SELECT k.position, v.* FROM kept AS k, jsonb_populate_record(NULL::visit, k.visit) AS v
    WHERE v.session_id IS NOT NULL
), visit_sums AS (
    SELECT site_id, session_id, max(visitor) AS visitor, min(started_at) AS started_at,
           max(ended_at) AS ended_at, sum(events) AS events, sum(pageviews) AS pageviews,
           sum(interactions) AS interactions, max(weight) AS weight,
           sum(heartbeats) AS heartbeats, bool_or(lasting) OR {visits.lasts(
               "min(started_at)", "max(ended_at)", postgres=True)} AS lasting,
           {GROUP_UNIFORM} AS uniform, {GROUP_UNIFORM} AND sum(pageviews) > 0 AS plain
    FROM visit_parts GROUP BY site_id, session_id
), visit_entries AS (
    SELECT DISTINCT ON (site_id, session_id) * FROM visit_parts WHERE entry_at IS NOT NULL
    ORDER BY site_id, session_id, entry_at, position
), visit_exits AS (
    SELECT DISTINCT ON (site_id, session_id) * FROM visit_parts WHERE exit_at IS NOT NULL
    ORDER BY site_id, session_id, exit_at DESC, position DESC
), visited AS (
    {GROUP_VISIT_UPSERT}
{rollups})
SELECT input.position, kept.batch_id IS NOT NULL AS stored,
       CASE WHEN kept.batch_id IS NULL THEN
           (SELECT event_count FROM batch
            WHERE batch.site_id = input.site_id AND batch.batch_key = input.batch_key) END
FROM input LEFT JOIN kept USING (position)
""")



@cache
def statements() -> tuple[PreparedStatement, PreparedStatement]:
    """The single-batch and the group statement, built at first use: the page and quarter-hour
    rows in them are app.visit_pages' and app.event_slots' own derivations, rendered for
    PostgreSQL."""
    stored = Table("stored", STORED_COLUMNS).alias("e")
    kept = Table("kept", ("batch_id", "shard")).alias("k")

    def rendered(query: Any) -> str:
        return database.get_sql_context(value_literals=True).sql(query).query()[0]

    pages = rendered(visit_pages.derived(SQL("TRUE"), stored).order_by(
        stored.site_id, stored.session_id, SQL('"page"')))

    def slots(shard: Any) -> Any:
        return event_slots.derived(SQL("TRUE"), stored, shard).order_by(
            stored.site_id, SQL('"slot"'), stored.type, shard)

    return (_batch_statement(_rollups(pages, rendered(slots(SQL("$12"))))),
            _group_statement(_rollups(pages, rendered(slots(kept.shard).join(
                kept, on=(kept.batch_id == stored.batch_id))))))

@dataclass(frozen=True)
class BatchRows:
    """What one request stores: batch-wide fields (the visit context among them) plus one dict
    per event (EVENT_COLUMNS)."""

    site_id: int
    batch_key: str | None  # None: no idempotency record (a goal posted to /api/goals)
    session_id: str | None
    anonymous_id: str | None
    user_id: str | None
    sent_ts: int | None
    received_at: datetime
    weight: float
    events: list[dict[str, Any]]
    period: str
    shard: int
    context: RequestContext = NO_CONTEXT

    def visit(self) -> dict[str, Any] | None:
        """This batch's contribution to its visit row (app.visits)."""
        return visits.summary(self.site_id, self.session_id, self.anonymous_id, self.weight,
                              self.context.columns(), self.events)

    def pages(self) -> list[dict[str, Any]]:
        """Its contribution to its visit's page rows (app.visit_pages; PostgreSQL's
        statements make them of the stored events)."""
        return visit_pages.summary(self.site_id, self.session_id, self.anonymous_id,
                                   self.weight, self.events)

    def slots(self) -> list[dict[str, Any]]:
        """Its contribution to the quarter-hour rows (app.event_slots; PostgreSQL's
        statements make them of the stored events)."""
        return event_slots.summary(self.site_id, self.shard, self.weight, self.events)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of one batch: stored now, or a resend of a batch id already stored."""

    stored: bool
    count: int  # events stored now; for a resend, the events its stored copy had


def store(rows: BatchRows) -> Outcome:
    """Store the events (and the batch id), unless the batch id was already stored."""
    if is_postgres() and rows.batch_key is not None:
        return _store_postgres(rows)
    return _store_portable(rows)


def _present(row: dict[str, Any]) -> dict[str, Any]:
    """`row` without its null members: jsonb_to_recordset and jsonb_populate_record read a
    missing key as NULL, and PostgreSQL parses every key it is sent. Most of an event's
    columns are null (a page view has no name, a click no campaign), and converting the JSON
    parameter was 12 % of the group statement's time (perf); without the nulls the statement
    took about 5 % less as the client sees it (bench/README.md, `store_nodes.py --group`), for
    1.6 µs of Python per event."""
    return {key: value for key, value in row.items() if value is not None}


def _events_json(rows: BatchRows) -> list[dict[str, Any]]:
    return [_present(event) for event in rows.events]


def _store_postgres(rows: BatchRows) -> Outcome:
    params = {
        "site_id": rows.site_id, "batch_key": rows.batch_key, "count": len(rows.events),
        "received_at": rows.received_at, "session_id": rows.session_id,
        "anonymous_id": rows.anonymous_id, "user_id": rows.user_id, "sent_ts": rows.sent_ts,
        "weight": rows.weight, "events": orjson.dumps(_events_json(rows)).decode(),
        "period": rows.period, "shard": rows.shard, **rows.context.columns(),
        "visit": orjson.dumps(_present(rows.visit() or {})).decode(),
    }
    (stored, stored_count) = statements()[0].execute(params).fetchone()
    return _outcome(rows, stored, stored_count)


def store_group(group: list[BatchRows]) -> list[Outcome]:
    """Store several batches (each with a batch id) in one PostgreSQL statement.

    The result says, batch by batch, whether it was stored; a batch id already stored, before
    or earlier in this group (the first copy in the group is the one stored), is not. A group
    of one takes the single-batch statement, so a lone request costs what it did before.
    """
    if len(group) == 1:
        return [_store_postgres(group[0])]
    firsts: dict[tuple[int, str | None], int] = {}
    for position, rows in enumerate(group):
        firsts.setdefault((rows.site_id, rows.batch_key), position)
    batches = [_group_row(position, group[position]) for position in firsts.values()]
    cursor = statements()[1].execute({"batches": orjson.dumps(batches).decode()})
    by_position = {position: _outcome(group[position], stored, stored_count)
                   for position, stored, stored_count in cursor.fetchall()}
    outcomes = []
    for position, rows in enumerate(group):
        first = by_position[firsts[(rows.site_id, rows.batch_key)]]
        outcomes.append(first if position in by_position else Outcome(False, first.count))
    return outcomes


def _outcome(rows: BatchRows, stored: bool, stored_count: int | None) -> Outcome:
    if stored:
        return Outcome(True, len(rows.events))
    if stored_count is None:
        # The stored copy was committed by a concurrent request while this statement ran: the
        # statement's snapshot, taken before, cannot see it; a new one can.
        stored_count = first_count(rows.site_id, rows.batch_key)
    return Outcome(False, stored_count)


def _group_row(position: int, rows: BatchRows) -> dict[str, Any]:
    return _present({"position": position, "site_id": rows.site_id, "batch_key": rows.batch_key,
                     "count": len(rows.events), "received_at": rows.received_at,
                     "session_id": rows.session_id, "anonymous_id": rows.anonymous_id,
                     "user_id": rows.user_id, "sent_ts": rows.sent_ts, "weight": rows.weight,
                     "events": _events_json(rows), "period": rows.period, "shard": rows.shard,
                     **rows.context.columns(), "visit": _present(rows.visit() or {})})


def _store_portable(rows: BatchRows) -> Outcome:
    shared = {"site_id": rows.site_id, "session_id": rows.session_id,
              "anonymous_id": rows.anonymous_id, "user_id": rows.user_id,
              "sent_ts": rows.sent_ts, "received_at": rows.received_at, "weight": rows.weight,
              **rows.context.columns()}
    with database.atomic():
        batch_id = None
        if rows.batch_key is not None:
            try:
                with database.atomic():
                    batch_id = Batch.insert(site_id=rows.site_id, batch_key=rows.batch_key,
                                            event_count=len(rows.events),
                                            received_at=rows.received_at).execute()
            except IntegrityError:
                return Outcome(False, first_count(rows.site_id, rows.batch_key))
        if rows.events:
            Event.insert_many([{**shared, "batch_id": batch_id, **event}
                               for event in rows.events]).execute()
            add_usage(rows.site_id, rows.period, rows.shard, len(rows.events))
            visits.add(rows.visit())
            visit_pages.add(rows.pages())
            event_slots.add(rows.slots())
    return Outcome(True, len(rows.events))


def add_usage(site_id: int, period: str, shard: int, count: int) -> None:
    (Usage.insert(site_id=site_id, period=period, shard=shard, events=count)
     .on_conflict(conflict_target=[Usage.site_id, Usage.period, Usage.shard],
                  update={Usage.events: Usage.events + count})
     .execute())


def first_count(site_id: int, batch_key: str | None) -> int:
    """How many events the stored copy of a duplicate batch had."""
    batch = Batch.get_or_none(Batch.site_id == site_id, Batch.batch_key == batch_key)
    return batch.event_count if batch is not None else 0
