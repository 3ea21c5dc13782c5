"""The read side reads a visit's source, channel and entry page, and an event's page and host,
from the columns ingest stores: no referrer, URL or UTM parameter is parsed in SQL any more.
Events stored before ingest derived those columns (migration 0006 added them, empty on the
rows already there) lack them.

Filling them must derive exactly as ingest does today (its referrer table, its channel rules),
which is live code that a migration may not import (a migration builds the schema it built
when it was written). So this migration only creates the table of upgrade tasks and asks for
the task `derived_columns`; `flask db upgrade` runs it right after the migrations with the
version's own code (app.tracking.backfill) and deletes the row in the same transaction.
"""
from peewee import CharField, Model

TASK = "derived_columns"


def _table(db):
    class UpgradeTask(Model):
        name = CharField(max_length=64, primary_key=True)

        class Meta:
            database = db
            table_name = "upgrade_task"

    return UpgradeTask


def up(migrator, db):
    table = _table(db)
    db.create_tables([table])
    table.insert(name=TASK).on_conflict_ignore().execute()


def down(migrator, db):
    db.drop_tables([_table(db)])
