"""The rollups are merged after ingest instead of in each batch's statement (app.rollups): the
mark of how far they have merged the event table (models.RollupMark).

The previous version merged every batch as it stored it, so every event stored so far is in
the rollups: the mark starts at the largest event id. Unless no rollup was kept (an upgrade
from before migration 0011, which since leaves them to be derived: no quarter hour although
there are events): then at 0, and `flask db upgrade` merges every event (app/cli/db.py). Run it,
as every upgrade, before this version's workers start, and after the previous version's have
stopped: an event that one of those stored after this migration would be merged a second
time. The table is frozen here, as it was: a migration imports no live code.
"""
from peewee import AutoField, BigIntegerField, Model, PostgresqlDatabase


def _table(db):
    class RollupMark(Model):
        id = AutoField()
        merged_through = BigIntegerField()

        class Meta:
            database = db
            table_name = "rollup_mark"

    return RollupMark


def up(migrator, db):
    if isinstance(db, PostgresqlDatabase):
        # No batch may commit between the largest id read here and the mark's commit.
        db.execute_sql("LOCK TABLE event IN SHARE MODE")
    db.create_tables([_table(db)])
    db.execute_sql("INSERT INTO rollup_mark (id, merged_through) "
                   "SELECT 1, CASE WHEN EXISTS (SELECT 1 FROM event_slot) "
                   "THEN COALESCE(MAX(id), 0) ELSE 0 END FROM event")


def down(migrator, db):
    db.drop_tables([_table(db)])
