from peewee import BigAutoField, BigIntegerField, CharField, DateTimeField, IntegerField, UUIDField

from models.base import BaseModel, JSONField


class ServerEvent(BaseModel):
    """A trusted server-side event; the only place money is recorded."""

    id = BigAutoField()
    uid = UUIDField(unique=True)  # the id returned to the caller
    site_id = IntegerField()
    event_name = CharField(max_length=128)
    identified_user_id = CharField(max_length=128, null=True)
    anonymous_id = CharField(max_length=128, null=True)
    session_id = CharField(max_length=128, null=True)
    order_id = CharField(max_length=128, null=True)
    # Integer minor units of `currency`; negative for a refund.
    amount_minor = BigIntegerField(null=True)
    currency = CharField(max_length=3, null=True)
    properties = JSONField(null=True)
    client_ts = BigIntegerField(null=True)
    occurred_at = DateTimeField()
    received_at = DateTimeField()

    class Meta:
        indexes = (
            (("site_id", "order_id"), True),
            (("site_id", "occurred_at"), False),
            (("site_id", "identified_user_id"), False),
        )
