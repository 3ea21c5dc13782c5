from peewee import CharField, DateTimeField, IntegerField

from models.base import BaseModel
from models.site import utcnow


class Batch(BaseModel):
    """One accepted POST /api/events body; its id makes a resend idempotent."""

    # A plain column, not a foreign key: the ingest hot path skips the per-row RI check.
    site_id = IntegerField()
    batch_key = CharField(max_length=128)
    event_count = IntegerField()
    received_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = ((("site_id", "batch_key"), True),)
