"""Index events by identified user only where there is one: most events have none, and every
index entry costs the ingest path."""
def up(migrator, db):
    migrator.migrate(migrator.drop_index("event", "event_site_id_user_id"))
    db.execute_sql(
        "CREATE INDEX event_site_id_user_id ON event (site_id, user_id) WHERE user_id IS NOT NULL")


def down(migrator, db):
    migrator.migrate(migrator.drop_index("event", "event_site_id_user_id"))
    migrator.migrate(migrator.add_index("event", ("site_id", "user_id"), False))
