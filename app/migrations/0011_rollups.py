"""Rollups kept at ingest for the agent's reads (issue 24): each visit's pages
(models.VisitPage), events per quarter hour and type (models.EventSlot), and two columns of the
visit (heartbeats, uniform). The version that wrote it derived them here from the events
already stored; they are now derived after the upgrade: this migration empties the visit table,
migration 0014 starts the rollups' mark at 0 when no rollup was kept, and `flask db upgrade`
merges every event waiting (app/cli/db.py), with the merge that runs after ingest (bench/README.md
gives the time at 10 million events). The tables are frozen here, as they were: a migration
imports no live code. Also:

- visit_long replaces the index on (site_id, ended_at): only visits of a day or more
  (`lasting`) are in it, so finding the visits that cross an instant is an index range of the
  day before it plus this small index, where the full index read every visit that ended
  later. And ended_at, which every batch moves, is no longer indexed: with the fillfactor's
  room, a batch updates its visit row in place (HOT), without new entries in its indexes.
- visit_irregular: the sessions that are no visit or carry more than one anonymous id or
  weight (`NOT plain`: few), whose page rows the analytics correct with their visit row.
- event_sessionless: the events without a session id (goals posted by a backend; few), which
  the page rows do not hold; a partial index, so other events pay nothing for it.
- event_sampled (0009b) goes: the counts per type it served are the quarter hours' now.

Run it, as every upgrade, before this version's workers start: the previous version's workers
do not write the new tables.
"""
from peewee import (
    SQL,
    BigAutoField,
    BigIntegerField,
    BooleanField,
    CharField,
    DateTimeField,
    DoubleField,
    FloatField,
    IntegerField,
    Model,
    PostgresqlDatabase,
    SmallIntegerField,
    TextField,
)

LOCK_TIMEOUT = "5s"
# A batch updates its visit's page rows and the current quarter hour's row; none of the
# columns it changes is indexed, so PostgreSQL updates in place (HOT) when the page has room.
FILLFACTOR = {"visit": 80, "visit_page": 85, "event_slot": 50}
SAMPLED_INDEX = "ON event (site_id, type, occurred_at) INCLUDE (weight) WHERE weight <> 1"
NEW_COLUMNS = (("heartbeats", DoubleField(default=0, constraints=[SQL("DEFAULT 0")])),
               ("uniform", BooleanField(default=True, constraints=[SQL("DEFAULT TRUE")])),
               ("plain", BooleanField(default=True, constraints=[SQL("DEFAULT TRUE")])),
               ("lasting", BooleanField(default=False, constraints=[SQL("DEFAULT FALSE")])))


def _tables(db):
    class VisitPage(Model):
        id = BigAutoField()
        site_id = IntegerField()
        session_id = CharField(max_length=128)
        page = TextField()
        visitor = CharField(max_length=128, null=True)
        started_at = DateTimeField()
        ended_at = DateTimeField()
        events = IntegerField()
        pageviews = IntegerField()
        events_weight = DoubleField()
        pageviews_weight = DoubleField()
        weight = FloatField()

        class Meta:
            database = db
            table_name = "visit_page"
            indexes = ((("site_id", "session_id", "page"), True), (("site_id", "started_at"), False))

    class EventSlot(Model):
        id = BigAutoField()
        site_id = IntegerField()
        slot = DateTimeField()
        type = CharField(max_length=64)
        shard = SmallIntegerField()
        events = BigIntegerField()
        weight = DoubleField()
        top_weight = FloatField()

        class Meta:
            database = db
            table_name = "event_slot"
            indexes = ((("site_id", "slot", "type", "shard"), True),)

    return [VisitPage, EventSlot]


def up(migrator, db):
    postgres = isinstance(db, PostgresqlDatabase)
    if postgres:
        db.execute_sql("SET LOCAL statement_timeout = 0")
        db.execute_sql(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
    # derived again below: no default to write on each row, and no dead rows left behind
    db.execute_sql("TRUNCATE visit" if postgres else "DELETE FROM visit")
    present = {column.name for column in db.get_columns("visit")}
    migrator.migrate(*(migrator.add_column("visit", name, field) for name, field in NEW_COLUMNS
                       if name not in present))  # 0010 on a new database made them already
    db.create_tables(_tables(db))
    if postgres:  # room on each page to update a row in place (no new index entries)
        for table, percent in FILLFACTOR.items():
            db.execute_sql(f"ALTER TABLE {table} SET (fillfactor = {percent})")
    db.execute_sql("DROP INDEX IF EXISTS visit_site_id_ended_at")
    db.execute_sql("CREATE INDEX visit_long ON visit (site_id, started_at) WHERE lasting")
    db.execute_sql("CREATE INDEX visit_irregular ON visit (site_id, started_at) WHERE NOT plain")
    db.execute_sql("CREATE INDEX event_sessionless ON event (site_id, occurred_at) "
                   "WHERE session_id IS NULL")
    db.execute_sql("DROP INDEX IF EXISTS event_sampled")


def down(migrator, db):
    for index in ("visit_long", "visit_irregular", "event_sessionless"):
        db.execute_sql(f"DROP INDEX IF EXISTS {index}")
    if isinstance(db, PostgresqlDatabase):
        db.execute_sql(f"CREATE INDEX event_sampled {SAMPLED_INDEX}")
    db.execute_sql("CREATE INDEX visit_site_id_ended_at ON visit (site_id, ended_at)")
    db.drop_tables(_tables(db))
    migrator.migrate(*(migrator.drop_column("visit", name) for name, _ in NEW_COLUMNS))
