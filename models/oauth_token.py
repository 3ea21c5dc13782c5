from peewee import CharField, DateTimeField, ForeignKeyField

from models.base import BaseModel
from models.oauth_grant import OAuthGrant
from models.site import utcnow


class OAuthToken(BaseModel):
    """An access token and the refresh token issued with it, as SHA-256 digests. A refresh
    rotates: the pair's refresh token is marked used and a new pair is issued; a used refresh
    token presented again revokes the grant."""

    grant = ForeignKeyField(OAuthGrant, backref="tokens", on_delete="CASCADE")
    access_hash = CharField(max_length=64, unique=True)
    refresh_hash = CharField(max_length=64, unique=True)
    created_at = DateTimeField(default=utcnow)
    access_expires_at = DateTimeField()
    refresh_expires_at = DateTimeField()
    refreshed_at = DateTimeField(null=True)  # its refresh token was used (rotated)

    class Meta:
        table_name = "oauth_token"
