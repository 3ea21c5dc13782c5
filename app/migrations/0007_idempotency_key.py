"""The `Idempotency-Key` header's memory (models.idempotency_key): one row per key a site
used, unique per (site, endpoint, key), so that the insert itself decides which of two racing copies
stores (app.ingest.idempotency)."""
from peewee import (
    BigAutoField,
    CharField,
    DateTimeField,
    IntegerField,
    Model,
    SmallIntegerField,
)

from app.migrations.frozen import JSONField


def up(migrator, db):
    class IdempotencyKey(Model):
        id = BigAutoField()
        site_id = IntegerField()
        endpoint = CharField(max_length=64)
        key = CharField(max_length=128)
        status = SmallIntegerField(null=True)
        response = JSONField(null=True)
        created_at = DateTimeField()

        class Meta:
            database = db
            table_name = "idempotency_key"
            indexes = ((("site_id", "endpoint", "key"), True), (("created_at",), False))

    db.create_tables([IdempotencyKey])


def down(migrator, db):
    db.execute_sql('DROP TABLE "idempotency_key"')
