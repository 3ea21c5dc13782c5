"""Agents connected by OAuth (app.oauth): clients, connect codes, grants, authorization codes
and tokens. Read keys (`flask keys create DOMAIN --kind read`) need no change: a key's kind is a
column already. Secrets are stored as SHA-256 digests only."""
from peewee import CharField, DateTimeField, ForeignKeyField, Model, TextField

from models.base import JSONField


def up(migrator, db):
    class Site(Model):
        class Meta:
            database = db
            table_name = "site"

    class OAuthClient(Model):
        client_id = TextField(unique=True)
        kind = CharField(max_length=16)
        client_name = TextField(null=True)
        redirect_uris = JSONField()
        grant_types = JSONField()
        metadata = JSONField()
        created_at = DateTimeField()
        fetched_until = DateTimeField(null=True)

        class Meta:
            database = db
            table_name = "oauth_client"

    class ConnectCode(Model):
        site = ForeignKeyField(Site, on_delete="CASCADE")
        code_hash = CharField(max_length=64, unique=True)
        created_at = DateTimeField()
        expires_at = DateTimeField()
        used_at = DateTimeField(null=True)

        class Meta:
            database = db
            table_name = "connect_code"

    class OAuthGrant(Model):
        site = ForeignKeyField(Site, on_delete="CASCADE")
        client = ForeignKeyField(OAuthClient, on_delete="CASCADE")
        redirect_uri = TextField()
        scope = CharField(max_length=64)
        resource = TextField()
        created_at = DateTimeField()
        last_used_at = DateTimeField(null=True)
        revoked_at = DateTimeField(null=True)

        class Meta:
            database = db
            table_name = "oauth_grant"

    class OAuthCode(Model):
        code_hash = CharField(max_length=64, unique=True)
        site = ForeignKeyField(Site, on_delete="CASCADE")
        client = ForeignKeyField(OAuthClient, on_delete="CASCADE")
        redirect_uri = TextField()
        scope = CharField(max_length=64)
        resource = TextField()
        code_challenge = CharField(max_length=128)
        code_challenge_method = CharField(max_length=8)
        created_at = DateTimeField()
        expires_at = DateTimeField()
        used_at = DateTimeField(null=True)
        grant = ForeignKeyField(OAuthGrant, null=True, on_delete="CASCADE")

        class Meta:
            database = db
            table_name = "oauth_code"

    class OAuthToken(Model):
        grant = ForeignKeyField(OAuthGrant, on_delete="CASCADE")
        access_hash = CharField(max_length=64, unique=True)
        refresh_hash = CharField(max_length=64, unique=True)
        created_at = DateTimeField()
        access_expires_at = DateTimeField()
        refresh_expires_at = DateTimeField()
        refreshed_at = DateTimeField(null=True)

        class Meta:
            database = db
            table_name = "oauth_token"

    db.create_tables([OAuthClient, ConnectCode, OAuthGrant, OAuthCode, OAuthToken])


def down(migrator, db):
    for table in ("oauth_token", "oauth_code", "oauth_grant", "connect_code", "oauth_client"):
        db.execute_sql(f'DROP TABLE "{table}"')
