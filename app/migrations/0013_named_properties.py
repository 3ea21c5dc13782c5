"""PostgreSQL: describe_data counts the property keys of every goal and custom event of the
period (app.analytics.describe) from an index, without reading the table.

Read from the table, those events' `properties` are on pages all over the period's heap: at 10
million events (bench egis_bench_read_10m, 2-core machine shared), 30 days hold 64,000 named
events with properties, and reading them touched 79,000 buffers: 540-750 ms. Counted from
event_named_properties in an index-only scan (no heap fetch): 45-65 ms, up to 126 ms under the
machine's load.

A B-tree entry holds at most 2,704 bytes, and properties may be 16 KB: an entry that large
would fail the whole ingest batch that carries it. So event_named_properties holds only the
events whose properties are at most 400 bytes as text: at most ~1,620 bytes as jsonb (4 bytes
per byte of text at worst: an array of one-digit numbers), beside a 128-character name (512
bytes in UTF-8) and the rest, well under the limit. event_named_long_properties finds the
longer ones (normally none), which are then read from the table. describe's SHORT_PROPERTIES
spells the same 400, as the planner uses a partial index only for a query whose conditions
imply the index's.

Not a wider event_named_steps (0009b) instead: it would need the same size condition, which a
funnel's query does not imply, and funnels would lose their index-only scans.

Size and cost at 10 million events: event_named_properties 19 MB (195,000 entries, ~100 bytes
each; event_named_steps is 31 MB), event_named_long_properties empty; building both took 3.4 s
(the table in the OS cache), under a lock that holds back ingest: on a large table, deploy in a
quiet hour. At ingest each named event with short properties (1 in 50 events there) pays an
index entry, and each named event the conditions' `properties::text`: inserting 78,600 named
events into a table with the event indexes took 1.16-1.45 s without these two, 1.32-1.67 s
with them (~3 µs more per named event, ~0.1 µs per event overall).

SQLite has no such index: it reads the period's named events (8,000 at 1 million events) from
the table through event_site_id_type_occurred_at, 21-34 ms against 17-44 ms for the latest 200
per name that describe read before; and it uses a partial index only when the query spells its
condition as a literal, which Peewee's bound parameters are not.
"""
from app.migrations.frozen import create_postgres_indexes, drop_postgres_indexes

INDEXES = {
    "event_named_properties": "ON event (site_id, type, occurred_at) INCLUDE (name, weight, "
                              "properties) WHERE name IS NOT NULL "
                              "AND octet_length(properties::text) <= 400",
    "event_named_long_properties": "ON event (site_id, type, occurred_at) WHERE name IS NOT NULL "
                                   "AND octet_length(properties::text) > 400",
}


def up(migrator, db):
    create_postgres_indexes(db, INDEXES)


def down(migrator, db):
    drop_postgres_indexes(db, INDEXES)
