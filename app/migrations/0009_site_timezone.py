"""The site's time zone (docs/AGENTS.md, "The tools"): an IANA name, `UTC` for every
existing site, in which the agent tools count days and `time:*` buckets."""
from peewee import CharField


def up(migrator, db):
    migrator.migrate(migrator.add_column("site", "timezone",
                                         CharField(max_length=64, default="UTC")))


def down(migrator, db):
    migrator.migrate(migrator.drop_column("site", "timezone"))
