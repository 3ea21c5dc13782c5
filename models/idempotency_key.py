from peewee import BigAutoField, CharField, DateTimeField, IntegerField, SmallIntegerField

from models.base import BaseModel, JSONField
from models.site import utcnow


class IdempotencyKey(BaseModel):
    """An `Idempotency-Key` a site sent to /api/goals, /api/server/events or /api/crawl/report,
    with the answer its request got, so that a repeat within app.ingest.idempotency.KEY_DAYS is
    answered the same and stores nothing (app.ingest.idempotency)."""

    id = BigAutoField()
    # A plain column, not a foreign key, as batch.site_id: no per-row RI check on ingest.
    site_id = IntegerField()
    endpoint = CharField(max_length=64)  # the request's path: a key is per site and endpoint
    key = CharField(max_length=128)
    status = SmallIntegerField(null=True)  # None until the first request's answer is stored
    response = JSONField(null=True)  # the first answer's JSON body; None for an empty one
    created_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = (
            (("site_id", "endpoint", "key"), True),
            (("created_at",), False),  # the retention job's range
        )
