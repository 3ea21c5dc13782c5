from peewee import CharField

from models.base import BaseModel


class UpgradeTask(BaseModel):
    """A step of an upgrade that a migration left to the app's live code (a backfill that must
    derive exactly as the running version does): `flask db upgrade` runs it after the
    migrations and deletes its row in the same transaction (app/cli/db.py), so an upgrade that
    stops midway runs it again."""

    name = CharField(max_length=64, primary_key=True)

    class Meta:
        table_name = "upgrade_task"
