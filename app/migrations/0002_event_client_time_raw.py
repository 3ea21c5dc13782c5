"""Keep a goal's client_timestamp as sent (it may be neither ISO 8601 nor epoch ms)."""
from peewee import CharField


def up(migrator, db):
    migrator.migrate(
        migrator.add_column("event", "client_time_raw", CharField(max_length=64, null=True)))


def down(migrator, db):
    migrator.migrate(migrator.drop_column("event", "client_time_raw"))
