"""PostgreSQL: partial covering indexes from which `funnel` and `describe_data` read.

A funnel step is page views of one path (or of a pattern's literal prefix), or goals / custom
events of one name. Without these indexes each funnel read the period's page views from the
table: at 10 million events, 30 days of page views are ~700 000 rows spread over most of the
table's pages, 2 s before any counting. With them each step is one index range read without
touching the table (an index-only scan: site, path or type and name, time, and the session,
visitor and weight it counts). Three page steps over 30 days of a 10-million-event site went
from 3.6 s to 0.5 s on the 2-core test machine under load (ad hoc, before the bench's figures).

- event_page_steps: page views only, `text_pattern_ops` so that a prefix (`/blog/**`) and a
  pattern's literal prefix are byte ranges whatever the database's collation.
- event_named_steps: events with a name (goals, custom events) only; describe_data also
  counts the names from it, and finds each name's latest events (whose properties it reads).
- event_sampled: the sampled events only (weight other than 1; none until a site is over its
  quota): describe_data's weighted counts per type are the events counted in
  event_site_id_type_occurred_at plus these events' weights minus 1, without reading the table.

Only page views, named events and sampled events pay an extra index entry at ingest. Building
them reads the whole table once, under a lock that holds back ingest meanwhile: on a large
table, deploy in a quiet hour. SQLite (the small deployments) keeps its indexes: a partial index is used there
only when the query spells its condition as a literal, and Peewee binds values as parameters.
"""
from app.migrations.frozen import create_postgres_indexes, drop_postgres_indexes

INDEXES = {
    "event_page_steps": "ON event (site_id, path text_pattern_ops, occurred_at) "
                        "INCLUDE (session_id, anonymous_id, weight) WHERE type = 'pageview'",
    "event_named_steps": "ON event (site_id, type, name, occurred_at) "
                         "INCLUDE (session_id, anonymous_id, weight) WHERE name IS NOT NULL",
    "event_sampled": "ON event (site_id, type, occurred_at) INCLUDE (weight) WHERE weight <> 1",
}


def up(migrator, db):
    create_postgres_indexes(db, INDEXES)


def down(migrator, db):
    drop_postgres_indexes(db, INDEXES)
