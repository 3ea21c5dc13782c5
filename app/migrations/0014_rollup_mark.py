"""The rollups are merged after ingest instead of in each batch's statement (app.rollups): the
mark of how far they have merged the event table (models.RollupMark).

The previous version merged every batch as it stored it, so every event stored so far is in
the rollups: the mark starts at the largest event id. Run it, as every upgrade, before this
version's workers start, and after the previous version's have stopped: an event that one of
those stored after this migration would be merged a second time.
"""
from peewee import PostgresqlDatabase

from models import RollupMark


def up(migrator, db):
    if isinstance(db, PostgresqlDatabase):
        # No batch may commit between the largest id read here and the mark's commit.
        db.execute_sql("LOCK TABLE event IN SHARE MODE")
    db.create_tables([RollupMark])
    db.execute_sql(f"INSERT INTO {RollupMark._meta.table_name} (id, merged_through) "
                   "SELECT 1, COALESCE(MAX(id), 0) FROM event")


def down(migrator, db):
    db.drop_tables([RollupMark])
