from peewee import BigIntegerField, CharField, DateField, IntegerField

from models.base import BaseModel

# Reasons an authenticated request or event was not counted as a stored event.
SAMPLED = "sampled"  # events dropped by quota sampling
DUPLICATE = "duplicate"  # batches resent with an id already stored
DUPLICATE_ORDER = "duplicate_order"  # server events with an orderId already stored
# Requests repeating an Idempotency-Key the site used on that endpoint (answered as the first).
DUPLICATE_IDEMPOTENCY_KEY = "duplicate_idempotency_key"
BOT = "bot"  # browser requests from known bots / headless browsers (events)
REJECTED_400 = "rejected_400"
REJECTED_403_PLAN = "rejected_403_plan"
REJECTED_403_ORIGIN = "rejected_403_origin"
REJECTED_413 = "rejected_413"
REJECTED_429 = "rejected_429"
REASONS = (SAMPLED, DUPLICATE, DUPLICATE_ORDER, DUPLICATE_IDEMPOTENCY_KEY, BOT, REJECTED_400,
           REJECTED_403_PLAN, REJECTED_403_ORIGIN, REJECTED_413, REJECTED_429)


class IngestTally(BaseModel):
    """Per site and UTC day, how much was not stored and why: the honest account."""

    site_id = IntegerField()
    day = DateField()
    reason = CharField(max_length=32)
    count = BigIntegerField(default=0)

    class Meta:
        indexes = ((("site_id", "day", "reason"), True),)
