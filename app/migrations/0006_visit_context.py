"""Visit context on every event (docs/ARCHITECTURE.md, "Visits"): what egis derives from a browser
request (country, device, browser, OS, language, screen class), the page's path and host, and,
on page views, where the page view came from (source, channel, referrer without query, UTM).

Every column is nullable with no default, so on PostgreSQL adding it changes only the catalog
(no table rewrite, partitions included) and old rows read as NULL. The brief exclusive lock each
ALTER needs waits at most LOCK_TIMEOUT, so live ingest never queues behind a long analytics
query holding the table; a timeout fails the upgrade, which can simply be run again.
"""
from peewee import CharField, PostgresqlDatabase, TextField

LOCK_TIMEOUT = "5s"

COLUMNS = (
    ("country", CharField(max_length=2, null=True)),
    ("device", CharField(max_length=16, null=True)),
    ("browser", CharField(max_length=64, null=True)),
    ("browser_version", CharField(max_length=16, null=True)),
    ("os", CharField(max_length=64, null=True)),
    ("os_version", CharField(max_length=16, null=True)),
    ("language", CharField(max_length=8, null=True)),
    ("screen", CharField(max_length=8, null=True)),
    ("path", TextField(null=True)),
    ("hostname", CharField(max_length=253, null=True)),
    ("source", TextField(null=True)),  # utm_source as given: as long as pageUrl allows
    ("channel", CharField(max_length=32, null=True)),
    ("referrer_url", TextField(null=True)),
    ("utm_source", TextField(null=True)),
    ("utm_medium", TextField(null=True)),
    ("utm_campaign", TextField(null=True)),
    ("utm_content", TextField(null=True)),
    ("utm_term", TextField(null=True)),
)


def up(migrator, db):
    if isinstance(db, PostgresqlDatabase):
        db.execute_sql(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
    migrator.migrate(*(migrator.add_column("event", name, field) for name, field in COLUMNS))


def down(migrator, db):
    migrator.migrate(*(migrator.drop_column("event", name) for name, _ in COLUMNS))
