"""What of the OAuth tables may go, as of a moment: the rules `flask data prune` deletes by
(app.retention.prune runs them in small transactions). Nothing live goes, and nothing that
reuse detection still needs.

Reuse detection (app.oauth.server) finds a replayed secret by its row: a used authorization code
(`used_at`) revokes the grant it made, a rotated refresh token (`refreshed_at`) revokes its
grant. Without the row the same secret is merely unknown, refused without revoking anything. A
stolen refresh token may be used by the thief first, so that the owner's own copy is the one
presented again later, after up to the 30 days it would have lived unrotated or longer: every
code and token row of a grant therefore stays as long as the grant can live. A grant lives
until it is revoked, or until its newest refresh token lapsed (30 days unused: no new token
can come of it after that).

Once a grant has ended, nothing depends on its rows for safety: each of its tokens and codes is
refused whether its row is found or not, and a replay has no grant left to revoke. Its rows are
kept ENDED_GRANT_KEPT more (30 days, a refresh token's lifetime), for three reasons: until then
a host presenting one of its tokens (one it may still hold, unlapsed) is told "the grant was
revoked: connect again" rather than "unknown"; `flask agents revoke` says when it was revoked;
and a registered client with no grant row has, by that, had no grant for 30 days, which is when
it may go (below) without a column of its own to remember it.

- Connect codes: CONNECT_CODE_KEPT (a day) after they expired or were used: until then the consent
  page says "used" or "expired, make a new one" rather than "wrong". The count of wrong codes
  is the rate limiter's, not these rows'.
- Authorization codes without a grant (never redeemed, or claimed by a request that failed
  before making its grant): CODE_KEPT (a day) after they expired; a code with a grant goes with
  it.
- Registered clients (RFC 7591): REGISTERED_CLIENT_KEPT (30 days) after registration, once no
  grant and no code refers to them (so their last grant ended more than 30 days ago, or they
  never had one). A host that presents a forgotten client_id gets invalid_client and registers
  again (RFC 7591 section 3).
- Clients known by their metadata document: the row is a cache of the document
  (app.oauth.clients), fetched again after `fetched_until`; once that has passed and no grant
  or code refers to it, it goes, and is fetched again at its next use, as it would have been.
"""
from datetime import datetime, timedelta

from peewee import SQL, Expression, Model, fn

from app.oauth.grants import REFRESH_LIFETIME
from models import ConnectCode, OAuthClient, OAuthCode, OAuthGrant, OAuthToken
from models.oauth_client import DOCUMENT, REGISTERED

ENDED_GRANT_KEPT = REFRESH_LIFETIME
CODE_KEPT = timedelta(days=1)
CONNECT_CODE_KEPT = timedelta(days=1)
REGISTERED_CLIENT_KEPT = timedelta(days=30)


def ended_grants(now: datetime) -> Expression:
    """Grants that ended more than ENDED_GRANT_KEPT before `now`: revoked then, or whose every
    refresh token (rotated or not) lapsed by then. A grant without tokens (its code was
    redeemed, its tokens never saved) counts as ending when it was made."""
    before = now - ENDED_GRANT_KEPT
    held = OAuthToken.alias()
    unlapsed = held.select(SQL("1")).where(held.grant == OAuthGrant.id,
                                           held.refresh_expires_at >= before)
    return ((OAuthGrant.revoked_at < before)
            | (OAuthGrant.revoked_at.is_null() & (OAuthGrant.created_at < before)
               & ~fn.EXISTS(unlapsed)))


def expired(now: datetime) -> list[tuple[type[Model], Expression]]:
    """Each OAuth table with the condition of its rows that may go as of `now`, in the order
    they must go (what refers to a row before it: the cascades delete nothing uncounted)."""
    ended = OAuthGrant.select(OAuthGrant.id).where(ended_grants(now))
    return [
        (OAuthToken, OAuthToken.grant.in_(ended)),
        (OAuthCode, OAuthCode.grant.in_(ended)
         | (OAuthCode.grant.is_null() & (OAuthCode.expires_at < now - CODE_KEPT))),
        (OAuthGrant, ended_grants(now)),
        (OAuthClient, _unused_clients(now)),
        (ConnectCode, (ConnectCode.expires_at < now - CONNECT_CODE_KEPT)
         | (ConnectCode.used_at < now - CONNECT_CODE_KEPT)),
    ]


def _unused_clients(now: datetime) -> Expression:
    granted = OAuthGrant.select(SQL("1")).where(OAuthGrant.client == OAuthClient.id)
    coded = OAuthCode.select(SQL("1")).where(OAuthCode.client == OAuthClient.id)
    registered = ((OAuthClient.kind == REGISTERED)
                  & (OAuthClient.created_at < now - REGISTERED_CLIENT_KEPT))
    cached = (OAuthClient.kind == DOCUMENT) & (OAuthClient.fetched_until < now)
    return (registered | cached) & ~fn.EXISTS(granted) & ~fn.EXISTS(coded)
