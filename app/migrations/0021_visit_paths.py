"""Each visit's path head (models.Visit.path_head, path_end_at, path_weight; app.rollups.visit_paths):
its first page views and goals folded, which `paths` from the entry reads instead of the events.

Nullable columns without a default: adding them changes only the catalog on PostgreSQL. The
heads of the visits already stored are derived with this version's code (the fold of
app.rollups.visit_paths, live code a migration may not import), so the migration asks for the
upgrade task `visit_paths`, which `flask db upgrade` runs right after the migrations
(app/cli/db.py) and which reads each visit's page views and goals up to the rollups' mark once;
the events after the mark are merged later, heads and all. The brief exclusive lock the ALTER
needs waits at most LOCK_TIMEOUT, as in 0020.
"""
from peewee import DateTimeField, FloatField, PostgresqlDatabase, TextField

from app.migrations.frozen import ask_upgrade_task, forget_upgrade_task

LOCK_TIMEOUT = "5s"
TASK = "visit_paths"
COLUMNS = (("path_head", TextField(null=True)), ("path_end_at", DateTimeField(null=True)),
           ("path_weight", FloatField(null=True)))


def up(migrator, db):
    if isinstance(db, PostgresqlDatabase):
        db.execute_sql(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
    migrator.migrate(*(migrator.add_column("visit", name, field) for name, field in COLUMNS))
    ask_upgrade_task(db, TASK)


def down(migrator, db):
    migrator.migrate(*(migrator.drop_column("visit", name) for name, _ in COLUMNS))
    forget_upgrade_task(db, TASK)
