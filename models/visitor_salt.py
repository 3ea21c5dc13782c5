import secrets
from datetime import date, timedelta

from peewee import CharField, DateField

from models.base import BaseModel

# How long after its day began a salt (and the visits derived under it) is deleted.
SALT_LIFETIME = timedelta(hours=48)


class VisitorSalt(BaseModel):
    """The random salt of one UTC day under which storage-free visitors are hashed
    (app.tracking.anonymous): shared by every worker and host through the database, deleted
    48 hours after its day began (app.retention.prune), so that no visitor id links two days."""

    day = DateField(unique=True)
    value = CharField(max_length=64)  # 32 random bytes, hex

    @classmethod
    def of_day(cls, day: date) -> bytes:
        """The salt of `day`, made now if there is none yet (the first maker wins a race)."""
        cls.insert(day=day, value=secrets.token_hex(32)).on_conflict_ignore().execute()
        return bytes.fromhex(cls.get(cls.day == day).value)
