from peewee import BigIntegerField, CharField, DateField, IntegerField

from models.base import BaseModel


class VisitorState(BaseModel):
    """The current visit of one visitor whose visits egis derives (storage-free tracking,
    app.tracking.anonymous): its session id and the time of its latest event. Deleted with the
    salt of `day`, 48 hours after that day began (app.retention.prune)."""

    # A plain column, not a foreign key, like the other ingest-path tables.
    site_id = IntegerField()
    visitor = CharField(max_length=128)  # the derived visitor id (or the batch's anonymous id)
    day = DateField(index=True)  # the UTC day of the latest event received: its salt's day
    session_id = CharField(max_length=128)  # random: not derivable from the visitor id
    last_event_ms = BigIntegerField()  # epoch ms: the same arithmetic on both databases

    class Meta:
        indexes = ((("site_id", "visitor"), True),)
