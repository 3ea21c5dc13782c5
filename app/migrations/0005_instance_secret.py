"""Random secrets of the installation, shared by every host (app.web.limits keys a client's
counters in Redis by a keyed hash of its address)."""
from peewee import CharField, Model


def up(migrator, db):
    class InstanceSecret(Model):
        name = CharField(max_length=32, unique=True)
        value = CharField(max_length=64)

        class Meta:
            database = db
            table_name = "instance_secret"

    db.create_tables([InstanceSecret])


def down(migrator, db):
    db.execute_sql('DROP TABLE "instance_secret"')
