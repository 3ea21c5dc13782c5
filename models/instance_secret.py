import secrets

from peewee import CharField

from models.base import BaseModel


class InstanceSecret(BaseModel):
    """Random secrets of this installation: made on first use, then shared by every worker and
    host through the database, and by nothing else."""

    name = CharField(max_length=32, unique=True)
    value = CharField(max_length=64)  # 32 random bytes, hex

    @classmethod
    def named(cls, name: str) -> bytes:
        """The secret called `name`, made now if there is none yet (the first maker wins a
        race)."""
        cls.insert(name=name, value=secrets.token_hex(32)).on_conflict_ignore().execute()
        return bytes.fromhex(cls.get(cls.name == name).value)
