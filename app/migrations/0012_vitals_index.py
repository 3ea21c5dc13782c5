"""PostgreSQL: partial covering indexes from which `get_web_vitals` reads its events.

Without them the tool read the period's performance events from the table: at 10 million
events, 30 days hold 291,000 of them spread over most pages of those days' 3.5 million events
(121,000 pages read), and every metric was then extracted from the JSON properties: 1.5-1.9 s,
most of the tool's 2.0-2.8 s (medians, the 2-core test machine under other benchmarks' load).
With them the same read is an index-only scan of 9,200 pages that takes each metric's value
from the index: 0.14-0.23 s, and the tool 0.9-1.0 s, the p75 sorts being most of what is left
(app/analytics/performance.py).

- event_vitals: performance events by site and time, with each metric's value (the expression
  `json_number` writes in the query, app/storage/dialect.py: the planner takes a value from the index only
  when the query spells it alike) and the URL and weight the tool reads. The properties are
  there too, though never read from it: PostgreSQL uses an index-only scan only when every
  column the query names is in the index. A B-tree entry holds at most 2,704 bytes, so only
  events whose properties (as text) are at most 400 bytes (as JSONB at most 4 times that) and
  whose URL is at most 800 bytes are in it (the bench's events: about 85 and 30-110 bytes).
- event_long_vitals: the other performance events (normally none), read with the table.

Ingest pays for performance events only (about 1 event in 12): one entry more, ~250 bytes, its
five metric values and both conditions computed. Inserting 27,000 performance events into a
copy of the event table with its indexes took 12.3 µs each against 6.4 without these two
(medians of 10, temporary tables, so without WAL); 333,000 events of all types, 1,572 against
1,574 ms (within the noise). Size at 10 million events (884,000 performance events): 216 MB,
~70 MB per month's partition; built in 9 s (the whole table read once, under a lock that holds
back ingest meanwhile: on a large table, deploy in a quiet hour). An index-only scan skips the
table only for pages that VACUUM has marked all-visible: autovacuum does so for inserts too.
SQLite (the small deployments) keeps its indexes: it reads its 30 days' 29,000 performance
events of 1 million from the table in 0.1 s.
"""
from app.migrations.frozen import create_postgres_indexes, drop_postgres_indexes

VITALS = ("lcp", "inp", "cls", "fcp", "ttfb")
METRIC = ("(CASE WHEN (jsonb_typeof(properties -> '{0}') = 'number') "
          "THEN CAST((properties ->> '{0}') AS double precision) END)")
FITS = "octet_length(properties::text) <= 400 AND octet_length(COALESCE(page_url, '')) <= 800"
TOO_LONG = "octet_length(properties::text) > 400 OR octet_length(COALESCE(page_url, '')) > 800"
INDEXES = {
    "event_vitals": f"ON event (site_id, occurred_at, "
                    f"{', '.join(METRIC.format(name) for name in VITALS)}) "
                    f"INCLUDE (page_url, weight, properties) WHERE type = 'performance' AND {FITS}",
    "event_long_vitals": "ON event (site_id, occurred_at) "
                         f"WHERE type = 'performance' AND ({TOO_LONG})",
}


def up(migrator, db):
    create_postgres_indexes(db, INDEXES)


def down(migrator, db):
    drop_postgres_indexes(db, INDEXES)
