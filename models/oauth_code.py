from peewee import CharField, DateTimeField, ForeignKeyField, TextField

from models.base import BaseModel
from models.oauth_client import OAuthClient
from models.oauth_grant import OAuthGrant
from models.site import Site, utcnow


class OAuthCode(BaseModel):
    """An authorization code: made when the owner allows, redeemed once at the token endpoint
    (which makes its grant). Only its SHA-256 is stored."""

    code_hash = CharField(max_length=64, unique=True)
    site = ForeignKeyField(Site, on_delete="CASCADE")
    client = ForeignKeyField(OAuthClient, on_delete="CASCADE")
    redirect_uri = TextField()
    scope = CharField(max_length=64)
    resource = TextField()
    code_challenge = CharField(max_length=128)
    code_challenge_method = CharField(max_length=8)
    created_at = DateTimeField(default=utcnow)
    expires_at = DateTimeField()
    used_at = DateTimeField(null=True)
    # The grant its redemption made: a second redemption revokes it.
    grant = ForeignKeyField(OAuthGrant, null=True, on_delete="CASCADE")

    class Meta:
        table_name = "oauth_code"
