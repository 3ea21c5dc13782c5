from peewee import CharField, DateTimeField, ForeignKeyField, TextField

from models.base import BaseModel
from models.oauth_client import OAuthClient
from models.site import Site, utcnow


class OAuthGrant(BaseModel):
    """A connected agent: one client allowed to read one site, from the redemption of the code
    the owner's consent made until it is revoked (`flask agents revoke`, a revocation request,
    or a replayed code or refresh token). Every token belongs to one grant."""

    site = ForeignKeyField(Site, on_delete="CASCADE")
    client = ForeignKeyField(OAuthClient, on_delete="CASCADE")
    redirect_uri = TextField()
    scope = CharField(max_length=64)
    resource = TextField()  # the audience of its access tokens: PUBLIC/api/mcp
    created_at = DateTimeField(default=utcnow)
    last_used_at = DateTimeField(null=True)
    revoked_at = DateTimeField(null=True)

    class Meta:
        table_name = "oauth_grant"
