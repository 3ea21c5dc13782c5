from peewee import (
    BigAutoField,
    BigIntegerField,
    CharField,
    DateTimeField,
    FloatField,
    IntegerField,
    TextField,
)

from models.base import BaseModel, JSONField

EVENT_TYPES = ("pageview", "click", "form_submit", "scroll", "performance", "custom", "goal",
               "error", "heartbeat")


class Event(BaseModel):
    """A stored tracking event (goals posted to /api/goals are events of type `goal`)."""

    id = BigAutoField()
    site_id = IntegerField()  # no FK constraint: see Batch
    batch_id = BigIntegerField(null=True)  # None for goals posted to /api/goals
    session_id = CharField(max_length=128, null=True)
    anonymous_id = CharField(max_length=128, null=True)
    user_id = CharField(max_length=128, null=True)  # the SDK's identify()
    type = CharField(max_length=64)
    name = CharField(max_length=128, null=True)
    page_url = TextField(null=True)
    page_title = TextField(null=True)
    referrer = TextField(null=True)
    properties = JSONField(null=True)
    client_ts = BigIntegerField(null=True)  # the event's own timestamp, epoch ms, as sent
    sent_ts = BigIntegerField(null=True)  # the batch timestamp, epoch ms, as sent
    client_time_raw = CharField(max_length=64, null=True)  # a goal's client_timestamp, as sent
    occurred_at = DateTimeField()  # skew-corrected event time (UTC)
    received_at = DateTimeField()
    weight = FloatField(default=1.0)  # 1/sample rate once a site is over quota

    class Meta:
        indexes = (
            (("site_id", "occurred_at"), False),
            (("site_id", "type", "occurred_at"), False),
        )


# Most events carry no identified user: index only those that do (the revenue join reads them).
Event.add_index(Event.index(Event.site_id, Event.user_id).where(Event.user_id.is_null(False)))
