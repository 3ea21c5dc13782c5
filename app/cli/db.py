"""`flask db upgrade`: the schema, through the migrations in app/migrations."""
import os

import click
from flask.cli import AppGroup
from playhouse.migrations import Runner

from app.db import is_postgres
from models import database

MIGRATIONS_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "migrations")
MIGRATION_LOCK_ID = 0x6567_6973  # "egis": one upgrade at a time on a PostgreSQL server

db_cli = AppGroup("db", help="Database schema.")


def upgrade_schema() -> list[str]:
    """Apply pending migrations; returns their names (empty when up to date)."""
    with database.connection_context():
        if not is_postgres():
            return Runner(database.obj, directory=MIGRATIONS_DIR).up()
        # Two instances deploying at once must not both apply the same migration.
        database.execute_sql("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK_ID,))
        try:
            return Runner(database.obj, directory=MIGRATIONS_DIR).up()
        finally:
            database.execute_sql("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_ID,))


@db_cli.command("upgrade")
def db_upgrade() -> None:
    """Create or upgrade the schema (idempotent)."""
    applied = upgrade_schema()
    click.echo("Applied: " + ", ".join(applied) if applied else "Schema is up to date.")
