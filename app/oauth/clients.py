"""OAuth clients: registered (RFC 7591, app.oauth.registration) or known by a client ID
metadata document (app.oauth.documents), and what the authorization server asks of them.
"""
from datetime import timedelta
from urllib.parse import urlsplit

from flask import current_app
from peewee import IntegrityError

from app.oauth import documents, metadata
from app.oauth.public import SCOPE
from models import OAuthClient, OAuthCode, OAuthGrant
from models.oauth_client import DOCUMENT, REGISTERED
from models.site import utcnow


class Client:
    """A client as Authlib's grants ask about it (authlib.oauth2.rfc6749.ClientMixin): public,
    one scope, the grant and response types egis supports, its exact redirect URIs."""

    def __init__(self, record: OAuthClient) -> None:
        self.record = record

    @property
    def name(self) -> str:
        """What the consent page calls it: its name, or the host of its metadata document."""
        if self.record.client_name:
            return self.record.client_name
        if self.record.kind == DOCUMENT:
            return urlsplit(self.record.client_id).hostname or self.record.client_id
        return "An app without a name"

    def get_client_id(self) -> str:
        return self.record.client_id

    def get_default_redirect_uri(self) -> str | None:
        uris = self.record.redirect_uris
        return uris[0] if len(uris) == 1 else None

    def get_allowed_scope(self, scope: str | None) -> str:
        return SCOPE  # the one scope; a request for another was refused before this

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in self.record.redirect_uris

    def check_client_secret(self, client_secret: str) -> bool:
        return False  # public clients have none

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == "none"

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in metadata.GRANT_TYPES


def find(client_id: str) -> Client | None:
    """The client `client_id` names, its metadata document fetched when it is one and is not
    cached (app.oauth.documents.fetch's errors when it cannot be); None for an unknown id."""
    if "\x00" in client_id:  # no client has one (and PostgreSQL's text refuses it)
        return None
    if documents.is_document_url(client_id):
        return Client(_document_client(client_id))
    record = OAuthClient.get_or_none(OAuthClient.client_id == client_id,
                                     OAuthClient.kind == REGISTERED)
    return Client(record) if record is not None else None


def stored(client_id: str) -> Client | None:
    """The client `client_id` names as egis keeps it, never fetched: None when it has no row."""
    if "\x00" in client_id:
        return None
    record = OAuthClient.get_or_none(OAuthClient.client_id == client_id)
    return Client(record) if record is not None else None


def has_been_granted(client: Client) -> bool:
    """Whether an owner has allowed this client (a code made for it, or a grant, is kept: the
    client goes with the last of them, app.oauth.expiry). A client never allowed is a stranger:
    egis never redirects to it with an error (app.oauth.consent)."""
    record = client.record
    return (OAuthCode.select().where(OAuthCode.client == record.id).exists()
            or OAuthGrant.select().where(OAuthGrant.client == record.id).exists())


def _document_client(url: str) -> OAuthClient:
    record = OAuthClient.get_or_none(OAuthClient.client_id == url)
    now = utcnow()
    if record is not None and record.kind == DOCUMENT and record.fetched_until > now:
        return record
    document = documents.fetch(url, bool(current_app.config["OAUTH_PRIVATE_CLIENT_URLS"]))
    values = {"kind": DOCUMENT, **metadata.columns(document.metadata),
              "fetched_until": now + timedelta(seconds=document.cache_seconds)}
    updated = OAuthClient.update(values).where(OAuthClient.client_id == url).execute()
    if not updated:
        try:
            OAuthClient.create(client_id=url, **values)
        except IntegrityError:  # another worker fetched it at the same time
            OAuthClient.update(values).where(OAuthClient.client_id == url).execute()
    return OAuthClient.get(OAuthClient.client_id == url)
