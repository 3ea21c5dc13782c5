"""`flask db upgrade`, `flask db partitions`: the schema (app/migrations), the upgrade tasks a
migration leaves to the live code (models.UpgradeTask), the event table's monthly partitions
(app/storage/partitions.py), and the rollups of the events stored (app.rollups)."""
import os
from collections.abc import Callable

import click
from flask.cli import AppGroup
from playhouse.migrations import Runner

from app.cli.common import connected
from app.rollups.merging import merge
from app.rollups.visit_paths import derive_every_head
from app.storage import partitions
from app.storage.dialect import current
from app.tracking.backfill import fill_derived_columns
from models import UpgradeTask, database

MIGRATIONS_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "migrations")
MIGRATION_LOCK_ID = 0x6567_6973  # "egis": one upgrade at a time on a PostgreSQL server

# What a migration asked to be run with this version's code (it names the task, in upgrade_task).
UPGRADE_TASKS: dict[str, Callable[[], None]] = {"derived_columns": fill_derived_columns,
                                                 "visit_paths": derive_every_head}

db_cli = AppGroup("db", help="Database schema.")


def upgrade_schema() -> list[str]:
    """Apply pending migrations and the upgrade tasks they left, then create the event
    partitions due (PostgreSQL) and merge the events waiting into the rollups (after an upgrade
    that leaves them to be derived, every event: migrations 0011 and 0014); returns the
    migrations' names (empty when up to date)."""
    with database.connection_context():
        # Two instances deploying at once must not both apply the same migration.
        with current().held_for_session(MIGRATION_LOCK_ID):
            applied = Runner(database.obj, directory=MIGRATIONS_DIR).up()
            run_upgrade_tasks()
        partitions.ensure()  # none on SQLite
        merge()
        return applied


def run_upgrade_tasks() -> None:
    """Run each upgrade task a migration asked for, each in one transaction with the deletion
    of its row: done once, or (stopped midway) again by the next upgrade."""
    if not database.table_exists(UpgradeTask._meta.table_name):
        return  # migrated to before 0016 only (tests of older migrations)
    for (name,) in UpgradeTask.select(UpgradeTask.name).order_by(UpgradeTask.name).tuples():
        with database.atomic():
            UPGRADE_TASKS[name]()
            UpgradeTask.delete().where(UpgradeTask.name == name).execute()


@db_cli.command("upgrade")
def db_upgrade() -> None:
    """Create or upgrade the schema (idempotent)."""
    applied = upgrade_schema()
    click.echo("Applied: " + ", ".join(applied) if applied else "Schema is up to date.")


@db_cli.command("partitions")
@connected
def db_partitions() -> None:
    """Create the event table's partitions due (this month and the next ones; PostgreSQL) and
    list them. `flask db upgrade` and `flask data prune` do the same; run any of them at least
    monthly (deploy/egis-prune.timer runs prune daily)."""
    if not current().partitions_events:
        click.echo("SQLite keeps one event table: nothing to partition.")
        return
    created = set(partitions.ensure())
    for month in partitions.monthly_partitions():
        note = "\tcreated now" if month.name in created else ""
        click.echo(f"{month.name}\t{month.start:%Y-%m-%d} to {month.end:%Y-%m-%d}{note}")
    click.echo(f"{partitions.DEFAULT_PARTITION}\tany other time")
