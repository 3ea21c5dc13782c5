"""Storage-free tracking (docs/ARCHITECTURE.md, "Storage-free tracking"): the random salt of each UTC day
under which visitors are hashed, and each derived visitor's current visit. Both are deleted 48
hours after their day began (app.retention)."""
from peewee import BigIntegerField, CharField, DateField, IntegerField, Model


def up(migrator, db):
    class VisitorSalt(Model):
        day = DateField(unique=True)
        value = CharField(max_length=64)

        class Meta:
            database = db
            table_name = "visitor_salt"

    class VisitorState(Model):
        site_id = IntegerField()
        visitor = CharField(max_length=128)
        day = DateField(index=True)
        session_id = CharField(max_length=128)
        last_event_ms = BigIntegerField()

        class Meta:
            database = db
            table_name = "visitor_state"
            indexes = ((("site_id", "visitor"), True),)

    db.create_tables([VisitorSalt, VisitorState])


def down(migrator, db):
    db.execute_sql('DROP TABLE "visitor_state"')
    db.execute_sql('DROP TABLE "visitor_salt"')
