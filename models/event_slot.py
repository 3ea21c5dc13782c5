from peewee import (
    BigAutoField,
    BigIntegerField,
    CharField,
    DateTimeField,
    DoubleField,
    FloatField,
    IntegerField,
    SmallIntegerField,
)

from models.base import BaseModel


class EventSlot(BaseModel):
    """Events of one type of a site in one quarter hour (UTC) of their time, counted and their
    weights summed: merged from the events after ingest (app.rollups.event_slots), so
    that event counts per period or per local hour, day, week or month read a few rows per
    quarter hour instead of the events. Every zone's offset is a whole number of quarter hours,
    so a local day starts at a slot's start.

    A slot's figures are the sum over its shards: the merges write shard 0, and rows from
    before them (each writer process added to its own shard, like models.Usage) remain.
    """

    id = BigAutoField()
    site_id = IntegerField()
    slot = DateTimeField()  # the quarter hour's first instant (UTC)
    type = CharField(max_length=64)
    shard = SmallIntegerField()
    events = BigIntegerField()  # stored events, unweighted
    weight = DoubleField()  # their sampling weights summed: the weighted count
    top_weight = FloatField()  # the largest weight: other than 1 when sampled

    class Meta:
        indexes = ((("site_id", "slot", "type", "shard"), True),)
