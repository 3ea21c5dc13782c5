"""Which events and visits came without device storage (storage-free tracking: the tracker's
`data-storage="false"`, or a backend's batch with `"anonymousId": "-"`).

Their visitor id is derived on the server under a salt of the UTC day (migration 0008), so it
changes every day: retention cannot follow such a visitor, and says how many of its visitors
it could not follow. The id's shape cannot tell (an anonymous id is free text: a client may
send 32 hex characters of its own), so ingest marks the events whose visitor id it derived,
and the rollups mark a visit when any of its events is marked.

`storage_free` is TRUE or NULL, never FALSE: nullable without a default, adding the column
changes only the catalog on PostgreSQL (no rewrite of the event table's partitions) and old rows
read as NULL, as in 0006. The rows stored before this migration carry no mark: which of them
were storage-free is not known. The brief exclusive lock each ALTER needs waits at most
LOCK_TIMEOUT, so live ingest never queues behind a long analytics query holding the table; a
timeout fails the upgrade, which can simply be run again.
"""
from peewee import BooleanField, PostgresqlDatabase

LOCK_TIMEOUT = "5s"
TABLES = ("event", "visit")


def up(migrator, db):
    if isinstance(db, PostgresqlDatabase):
        db.execute_sql(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
    migrator.migrate(*(migrator.add_column(table, "storage_free", BooleanField(null=True))
                       for table in TABLES))


def down(migrator, db):
    migrator.migrate(*(migrator.drop_column(table, "storage_free") for table in TABLES))
