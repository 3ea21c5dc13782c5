from peewee import CharField, DateTimeField, TextField

from models.base import BaseModel, JSONField
from models.site import utcnow

REGISTERED = "registered"  # by dynamic registration (POST /oauth/register)
DOCUMENT = "document"  # a client ID metadata document: the client_id is its https URL


class OAuthClient(BaseModel):
    """An OAuth client (an agent's host: Claude, ChatGPT, an editor). Public clients only: no
    secret. A client known by its metadata document is kept here as fetched, with the time after
    which it is fetched again (app.oauth.documents)."""

    client_id = TextField(unique=True)
    kind = CharField(max_length=16)
    client_name = TextField(null=True)
    redirect_uris = JSONField()  # list of strings, each following app.oauth.redirects
    grant_types = JSONField()
    # The rest of what the client registered or its document said, as answered (its fixed
    # grant types and scope: app.oauth.metadata.columns).
    metadata = JSONField()
    created_at = DateTimeField(default=utcnow)
    fetched_until = DateTimeField(null=True)  # DOCUMENT: fetched again after this

    class Meta:
        table_name = "oauth_client"


# Registration counts the last 24 hours' registrations; prune deletes those a day old (0018).
OAuthClient.add_index(OAuthClient.index(OAuthClient.created_at, name="oauth_client_registered_at")
                      .where(OAuthClient.kind == REGISTERED))
