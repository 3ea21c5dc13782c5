"""PostgreSQL: the covering indexes of the agent's reads hold the event id too.

A read of the agent's tools counts the events up to the rollups' mark and no later one, so that
the visits and the page views of one answer count the same events (app.rollups.mark): every
event scan carries `id <= mark`. An index-only scan can test that only when the index holds
the id; without it, each entry costs a heap fetch, and the scans these indexes exist for
(funnel steps 0009b, web vitals 0012, describe_data's property keys 0013) would read the
table again. So each is built again with `id` among its INCLUDE columns (8 bytes an entry), as
a new index, before the old one is dropped and the new one takes its name: reads keep an index
meanwhile. Building them reads the table under a lock that holds back ingest: on a large table,
deploy in a quiet hour. SQLite's indexes hold the rowid (the id) already.
"""
from peewee import PostgresqlDatabase

VITALS = ("lcp", "inp", "cls", "fcp", "ttfb")
METRIC = ("(CASE WHEN (jsonb_typeof(properties -> '{0}') = 'number') "
          "THEN CAST((properties ->> '{0}') AS double precision) END)")
FITS = "octet_length(properties::text) <= 400 AND octet_length(COALESCE(page_url, '')) <= 800"
STEPS = "INCLUDE (session_id, anonymous_id, weight{id})"
INDEXES = {
    "event_page_steps": "ON event (site_id, path text_pattern_ops, occurred_at) "
                        f"{STEPS} WHERE type = 'pageview'",
    "event_named_steps": f"ON event (site_id, type, name, occurred_at) {STEPS} "
                         "WHERE name IS NOT NULL",
    "event_vitals": f"ON event (site_id, occurred_at, "
                    f"{', '.join(METRIC.format(name) for name in VITALS)}) "
                    f"INCLUDE (page_url, weight, properties{{id}}) "
                    f"WHERE type = 'performance' AND {FITS}",
    "event_named_properties": "ON event (site_id, type, occurred_at) INCLUDE (name, weight, "
                              "properties{id}) WHERE name IS NOT NULL "
                              "AND octet_length(properties::text) <= 400",
}


def _replace(db, with_id: bool) -> None:
    db.execute_sql("SET LOCAL statement_timeout = 0")
    for name, definition in INDEXES.items():
        db.execute_sql(f"CREATE INDEX {name}_next "
                       + definition.format(id=", id" if with_id else ""))
        db.execute_sql(f"DROP INDEX {name}")
        db.execute_sql(f"ALTER INDEX {name}_next RENAME TO {name}")


def up(migrator, db):
    if isinstance(db, PostgresqlDatabase):
        _replace(db, with_id=True)


def down(migrator, db):
    if isinstance(db, PostgresqlDatabase):
        _replace(db, with_id=False)
