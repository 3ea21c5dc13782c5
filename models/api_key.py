from peewee import CharField, DateTimeField, ForeignKeyField

from models.base import BaseModel
from models.site import Site, utcnow

WRITE = "write"
SERVER = "server"
READ = "read"  # /api/mcp only: an agent's least privilege
KINDS = (WRITE, SERVER, READ)


class ApiKey(BaseModel):
    site = ForeignKeyField(Site, backref="keys", on_delete="CASCADE")
    kind = CharField(max_length=8)
    key_hash = CharField(max_length=64, unique=True)  # SHA-256 hex; the key itself is never stored
    hint = CharField(max_length=32)  # prefix and a few characters, for listings
    created_at = DateTimeField(default=utcnow)
    revoked_at = DateTimeField(null=True)
