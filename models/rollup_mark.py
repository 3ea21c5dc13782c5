from peewee import BigIntegerField

from models.base import BaseModel


class RollupMark(BaseModel):
    """How far the rollups (models.Visit, models.VisitPage, models.EventSlot) have merged the
    event table: every event whose id is at most `merged_through` is in them, none after it
    (app.rollups.mark). One row; none (an empty database) reads as 0."""

    merged_through = BigIntegerField()
