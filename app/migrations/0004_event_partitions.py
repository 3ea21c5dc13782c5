"""PostgreSQL: the event table partitioned by month of `occurred_at` (SQLite keeps one table).

The rows already stored move into the new table's DEFAULT partition; `upgrade_schema` then
gives every recent month its own partition (app/storage/partitions.py), moving those rows out of it.
A unique constraint of a partitioned table must hold the partition key: the primary key becomes
(id, occurred_at, site_id), with the site id too, as distributing the table by site (Citus,
deploy/SCALING.md) will require; ids still come from the one sequence, so each stays unique. The table is
rewritten in this migration's transaction: on a large existing table, deploy it in a quiet hour.
"""
from peewee import PostgresqlDatabase

INDEXES = (
    "CREATE INDEX event_site_id_occurred_at ON event (site_id, occurred_at)",
    "CREATE INDEX event_site_id_type_occurred_at ON event (site_id, type, occurred_at)",
    "CREATE INDEX event_site_id_user_id ON event (site_id, user_id) WHERE user_id IS NOT NULL",
)


def _rebuild(db, partitioned: bool) -> None:
    # The pool's per-request statement timeout is not meant for copying a whole table.
    db.execute_sql("SET LOCAL statement_timeout = 0")
    clause = " PARTITION BY RANGE (occurred_at)" if partitioned else ""
    db.execute_sql(f"CREATE TABLE event_new (LIKE event INCLUDING DEFAULTS){clause}")
    if partitioned:
        db.execute_sql("CREATE TABLE event_default PARTITION OF event_new DEFAULT")
    db.execute_sql("INSERT INTO event_new SELECT * FROM event")
    db.execute_sql("ALTER SEQUENCE event_id_seq OWNED BY event_new.id")
    db.execute_sql("DROP TABLE event")
    db.execute_sql("ALTER TABLE event_new RENAME TO event")
    key = "id, occurred_at, site_id" if partitioned else "id"
    db.execute_sql(f"ALTER TABLE event ADD CONSTRAINT event_pkey PRIMARY KEY ({key})")
    for statement in INDEXES:
        db.execute_sql(statement)


def up(migrator, db):
    if isinstance(db, PostgresqlDatabase):
        _rebuild(db, partitioned=True)


def down(migrator, db):
    if isinstance(db, PostgresqlDatabase):
        _rebuild(db, partitioned=False)
