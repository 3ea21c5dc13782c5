from peewee import CharField, DateTimeField, ForeignKeyField

from models.base import BaseModel
from models.site import Site, utcnow


class ConnectCode(BaseModel):
    """A one-time connect code (`flask agents connect DOMAIN`): typed into the consent page, it
    proves that whoever connects an agent runs the site's egis. Only its SHA-256 is stored."""

    site = ForeignKeyField(Site, on_delete="CASCADE")
    code_hash = CharField(max_length=64, unique=True)
    created_at = DateTimeField(default=utcnow)
    expires_at = DateTimeField()
    used_at = DateTimeField(null=True)

    class Meta:
        table_name = "connect_code"
