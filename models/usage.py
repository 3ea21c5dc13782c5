from peewee import BigIntegerField, CharField, IntegerField, SmallIntegerField

from models.base import BaseModel


class Usage(BaseModel):
    """Events stored per site and calendar month (UTC), spread over shards.

    Each writer adds to its own shard row, so a busy site's counter is not one hot row that
    serializes every request; the month's usage is the sum of the shards.
    """

    site_id = IntegerField()
    period = CharField(max_length=7)  # YYYY-MM
    shard = SmallIntegerField()
    events = BigIntegerField(default=0)

    class Meta:
        indexes = ((("site_id", "period", "shard"), True),)
