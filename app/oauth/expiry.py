"""What of the OAuth tables is past all use as of a moment, and so may be deleted: the rules
`flask data prune` deletes by (app.retention.prune runs them in small transactions). These are
the lifetimes of secrets: they do not depend on how many months of data the operator keeps.

Reuse detection (app.oauth.server) finds a replayed secret by its row, by digest: a used
authorization code (`used_at`) revokes the grant it made, a rotated refresh token
(`refreshed_at`) revokes its grant. Without the row the same secret is merely unknown: refused,
but revoking nothing. A thief may use a stolen refresh token first, so that the owner's host
presents its own copy again later, up to the 30 days that copy would have lived unrotated or
longer; meanwhile the thief keeps the grant alive by refreshing. So while a grant lives, every
row of it stays: the code it was made from and every refresh token rotated away, however long
ago. A grant lives until it is revoked or its newest refresh token lapsed (30 days unused: no
token can come of it after that). That costs a row per refresh (some 200 bytes): a host
refreshes when its one-hour access token ends, so about 24 a day for an agent in use all day.

- An ended grant goes with its tokens and codes GRANT_GRACE (30 days) after it ended. Nothing
  depends on those rows for safety any more: each of its tokens and codes is refused with or
  without its row, and a replay has no grant left to revoke. For that month, a host that comes
  back with one of its tokens hears why it is refused ("revoked", "lapsed") rather than
  "unknown", the operator can still see an incident's grant (client, times, the chain of
  tokens), and a grant row left is how the client rule below knows that its client had a grant
  in the last 30 days, with no column of its own to remember it (and how app.oauth.consent
  knows that an owner allowed the client: a stranger is never redirected to).
- Connect codes and authorization codes that made no grant: SPENT_GRACE (a day) after they
  expired (a used one has expired too: 15 and 10 minutes after it was made). Until then one
  typed or sent again is refused by name ("used", "expired") rather than as wrong or unknown.
  A code that made a grant goes with the grant.
- A registered client (RFC 7591) goes once it was registered more than UNUSED_CLIENT_GRACE (a
  day) ago and has no grant and no code: one that no owner ever allowed goes a day after it
  registered (anyone may register, at no cost: app.oauth.registration), one that had a grant
  GRANT_GRACE after its last grant ended, with that grant. A host that still holds its
  client_id is refused as unknown and must register again (README, "Agents by OAuth"). The
  consent page leaves no row behind: an owner on it for such a client at the moment prune runs
  sees "This app cannot connect" when allowing (no client has a column saying when it was last
  asked for; this costs a reconnection, rarely, and no access).
- A client known by its metadata document is a cache of the document (app.oauth.clients fetches
  it again once `fetched_until` has passed, at most 24 hours after fetching): it goes
  SPENT_GRACE after that, with no grant and no code, and its next use fetches it again, as it
  would have anyway. The grace keeps prune away from a document in use right now (a use fetches
  a stale document again, which moves `fetched_until`).
"""
from datetime import datetime, timedelta

from peewee import Expression, Model, Select

from app.oauth.grants import REFRESH_LIFETIME
from models import ConnectCode, OAuthClient, OAuthCode, OAuthGrant, OAuthToken
from models.oauth_client import DOCUMENT, REGISTERED

SPENT_GRACE = timedelta(days=1)  # one-time codes, and a stale metadata document's cache
GRANT_GRACE = REFRESH_LIFETIME  # 30 days: an ended grant's rows
UNUSED_CLIENT_GRACE = timedelta(days=1)  # a registered client without a grant or a code


def expired(now: datetime) -> list[tuple[type[Model], Expression]]:
    """The rows past all use as of `now`, table by table, in the order they are to be deleted
    (a grant's codes and tokens before it, clients once their grants went)."""
    spent_before = now - SPENT_GRACE
    ended = _grants_ended_before(now - GRANT_GRACE)
    unused_client = (OAuthClient.id.not_in(OAuthGrant.select(OAuthGrant.client))
                     & OAuthClient.id.not_in(OAuthCode.select(OAuthCode.client)))
    idle_client = (
        ((OAuthClient.kind == REGISTERED)
         & (OAuthClient.created_at < now - UNUSED_CLIENT_GRACE))
        | ((OAuthClient.kind == DOCUMENT) & (OAuthClient.fetched_until < spent_before)))
    return [
        (OAuthCode, (OAuthCode.grant.is_null() & (OAuthCode.expires_at < spent_before))
         | OAuthCode.grant.in_(ended)),
        (OAuthToken, OAuthToken.grant.in_(ended)),
        (OAuthGrant, OAuthGrant.id.in_(ended)),
        (OAuthClient, unused_client & idle_client),
        (ConnectCode, ConnectCode.expires_at < spent_before),
    ]


def _grants_ended_before(before: datetime) -> Select:
    """The ids of the grants that ended before `before`: revoked then, or made before it with
    no refresh token that lapses after it (nor one at all: a grant's tokens are saved just after
    it is made, so one without any is a request that failed midway)."""
    lasting = OAuthToken.select(OAuthToken.grant).where(OAuthToken.refresh_expires_at >= before)
    return OAuthGrant.select(OAuthGrant.id).where(
        (OAuthGrant.revoked_at < before)
        | (OAuthGrant.revoked_at.is_null() & (OAuthGrant.created_at < before)
           & OAuthGrant.id.not_in(lasting)))
