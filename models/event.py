from contextvars import ContextVar
from typing import Any

from peewee import (
    BigAutoField,
    BigIntegerField,
    BooleanField,
    CharField,
    DateTimeField,
    FloatField,
    IntegerField,
    ModelSelect,
    TextField,
)

from models.base import BaseModel, JSONField

# The largest event id that the statements of this context may read, or None (no bound): a read
# of the agent's tools sets it to the rollups' mark in its snapshot (app.rollups.mark), so that
# every event it scans is one its visits count, and none stored since.
readable_through: ContextVar[int | None] = ContextVar("readable_through", default=None)

EVENT_TYPES = ("pageview", "click", "form_submit", "scroll", "performance", "custom", "goal",
               "error", "heartbeat")


class Event(BaseModel):
    """A stored tracking event (goals posted to /api/goals are events of type `goal`).

    `select` adds `id <= readable_through` when that is set: the one place every read of the
    table starts from, whatever builds the statement."""

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
    # True when ingest derived the visitor id (storage-free tracking, app.tracking.anonymous):
    # that id lasts one UTC day, so retention cannot follow it. NULL otherwise: an id's shape
    # cannot tell (a client may send 32 hex characters of its own), and a nullable column
    # without default is added to a table of millions of rows without rewriting it.
    storage_free = BooleanField(null=True)
    # Visit context (docs/ARCHITECTURE.md, "Visits"), derived on the server from a browser request
    # (a backend's request, without Origin, gets none); never the raw address or User-Agent.
    country = CharField(max_length=2, null=True)  # ISO 3166-1 alpha-2
    device = CharField(max_length=16, null=True)  # Desktop, Mobile, Tablet
    browser = CharField(max_length=64, null=True)
    browser_version = CharField(max_length=16, null=True)  # major version
    os = CharField(max_length=64, null=True)
    os_version = CharField(max_length=16, null=True)  # major version
    language = CharField(max_length=8, null=True)  # ISO 639-1, lower case
    screen = CharField(max_length=8, null=True)  # small, medium, large, xlarge
    # Every event: its page_url's path (event:page) and host without www. (event:hostname).
    path = TextField(null=True)
    hostname = CharField(max_length=253, null=True)
    # Page views only: where this page view came from; a visit's are its first page view's.
    source = TextField(null=True)  # utm_source as given, or a referrer host or name
    channel = CharField(max_length=32, null=True)
    referrer_url = TextField(null=True)  # the referrer without query string and fragment
    utm_source = TextField(null=True)
    utm_medium = TextField(null=True)
    utm_campaign = TextField(null=True)
    utm_content = TextField(null=True)
    utm_term = TextField(null=True)

    class Meta:
        indexes = (
            (("site_id", "occurred_at"), False),
            (("site_id", "type", "occurred_at"), False),
        )

    @classmethod
    def select(cls, *fields: Any) -> ModelSelect:
        query = super().select(*fields)
        through = readable_through.get()
        return query if through is None else query.where(cls.id <= through)


# Most events carry no identified user: index only those that do (the revenue join reads them).
Event.add_index(Event.index(Event.site_id, Event.user_id).where(Event.user_id.is_null(False)))
