"""The visit table (models.Visit): one row per session of a site, kept up to date by the
store statement of that version. The rows of the events already stored are derived after the
upgrade (migration 0011 empties the table, and `flask db upgrade` merges the events into the
rollups: app/cli/db.py). Run it, as every upgrade, before this version's workers start: the
previous version's workers do not write the table.

The table as the model had it when 0011 was written (so 0011 adds none of its columns on a new
database), frozen here: a migration imports no live code.
"""
from peewee import (
    SQL,
    BigAutoField,
    BooleanField,
    CharField,
    DateTimeField,
    DoubleField,
    FloatField,
    IntegerField,
    Model,
    TextField,
)


def up(migrator, db):
    class Visit(Model):
        id = BigAutoField()
        site_id = IntegerField()
        session_id = CharField(max_length=128)
        visitor = CharField(max_length=128, null=True)
        started_at = DateTimeField()
        ended_at = DateTimeField()
        events = IntegerField()
        pageviews = IntegerField()
        interactions = IntegerField()
        weight = FloatField()
        heartbeats = DoubleField(default=0, constraints=[SQL("DEFAULT 0")])
        uniform = BooleanField(default=True, constraints=[SQL("DEFAULT TRUE")])
        plain = BooleanField(default=True, constraints=[SQL("DEFAULT TRUE")])
        lasting = BooleanField(default=False, constraints=[SQL("DEFAULT FALSE")])
        entry_at = DateTimeField(null=True)
        entry_page = TextField(null=True)
        exit_at = DateTimeField(null=True)
        exit_page = TextField(null=True)
        country = CharField(max_length=2, null=True)
        device = CharField(max_length=16, null=True)
        browser = CharField(max_length=64, null=True)
        browser_version = CharField(max_length=16, null=True)
        os = CharField(max_length=64, null=True)
        os_version = CharField(max_length=16, null=True)
        language = CharField(max_length=8, null=True)
        screen = CharField(max_length=8, null=True)
        source = TextField(null=True)
        channel = CharField(max_length=32, null=True)
        referrer = TextField(null=True)
        utm_source = TextField(null=True)
        utm_medium = TextField(null=True)
        utm_campaign = TextField(null=True)
        utm_content = TextField(null=True)
        utm_term = TextField(null=True)

        class Meta:
            database = db
            table_name = "visit"
            indexes = ((("site_id", "session_id"), True), (("site_id", "started_at"), False))

    db.create_tables([Visit])


def down(migrator, db):
    db.execute_sql('DROP TABLE "visit"')
