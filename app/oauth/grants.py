"""Grants and what they are made of: authorization codes, access and refresh tokens.

Every secret is random (256 bits for tokens and codes) and stored as its SHA-256 only; tokens
carry a prefix (`egisat_`, `egisrt_` with EGIS_KEY_PREFIX=egis) so that a leaked one is
recognizable and an access token is told from a key without a query. Lifetimes: a code 10
minutes, an access token 1 hour, a refresh token 30 days (each refresh issues a new one, so a
grant lapses after 30 days unused). A code or a refresh token is claimed by one conditional
update, so of two concurrent uses one wins and the other counts as a replay.
"""
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from flask import current_app

from app.access.keys import hash_key
from models import OAuthClient, OAuthCode, OAuthGrant, OAuthToken, Site
from models.site import utcnow

CODE_LIFETIME = timedelta(minutes=10)
ACCESS_LIFETIME = timedelta(hours=1)
REFRESH_LIFETIME = timedelta(days=30)
LAST_USED_PRECISION = timedelta(minutes=1)  # last_used_at is written at most this often


def is_past(moment: datetime) -> bool:
    """Whether `moment` (naive UTC, as stored) has come."""
    return moment <= utcnow()


def access_prefix() -> str:
    return f"{current_app.config['KEY_PREFIX']}at_"


def refresh_prefix() -> str:
    return f"{current_app.config['KEY_PREFIX']}rt_"


def new_secret(prefix: str = "") -> str:
    return prefix + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class CodeRequest:
    """What an allowed authorization request binds its code to."""

    site: Site
    client: OAuthClient
    redirect_uri: str
    scope: str
    resource: str
    code_challenge: str
    code_challenge_method: str


def save_code(code: str, bound: CodeRequest) -> None:
    now = utcnow()
    OAuthCode.create(code_hash=hash_key(code), site=bound.site, client=bound.client,
                     redirect_uri=bound.redirect_uri, scope=bound.scope, resource=bound.resource,
                     code_challenge=bound.code_challenge,
                     code_challenge_method=bound.code_challenge_method, created_at=now,
                     expires_at=now + CODE_LIFETIME)


def find_code(code: str) -> OAuthCode | None:
    return OAuthCode.get_or_none(OAuthCode.code_hash == hash_key(code))


def redeem_code(record: OAuthCode) -> OAuthGrant | None:
    """Claim the code and make its grant; None when it was claimed already (a replay)."""
    now = utcnow()
    claimed = (OAuthCode.update(used_at=now)
               .where(OAuthCode.id == record.id, OAuthCode.used_at.is_null()).execute())
    if not claimed:
        return None
    grant = OAuthGrant.create(site=record.site_id, client=record.client_id,
                              redirect_uri=record.redirect_uri, scope=record.scope,
                              resource=record.resource, created_at=now, last_used_at=now)
    OAuthCode.update(grant=grant).where(OAuthCode.id == record.id).execute()
    return grant


def replayed_code(record: OAuthCode) -> None:
    """A code presented again: the grant it made is revoked (RFC 6749 section 4.1.2)."""
    granted = OAuthCode.get_by_id(record.id).grant_id
    if granted is not None:
        revoke(granted)


def save_tokens(grant_id: int, access_token: str, refresh_token: str) -> None:
    now = utcnow()
    OAuthToken.create(grant=grant_id, access_hash=hash_key(access_token),
                      refresh_hash=hash_key(refresh_token), created_at=now,
                      access_expires_at=now + ACCESS_LIFETIME,
                      refresh_expires_at=now + REFRESH_LIFETIME)


def find_refresh(refresh_token: str) -> OAuthToken | None:
    return (OAuthToken.select(OAuthToken, OAuthGrant).join(OAuthGrant)
            .where(OAuthToken.refresh_hash == hash_key(refresh_token)).get_or_none())


def find_token(token: str) -> OAuthToken | None:
    """The pair `token` (access or refresh) belongs to."""
    digest = hash_key(token)
    return (OAuthToken.select(OAuthToken, OAuthGrant).join(OAuthGrant)
            .where((OAuthToken.access_hash == digest) | (OAuthToken.refresh_hash == digest))
            .get_or_none())


def rotate(record: OAuthToken) -> bool:
    """Claim a refresh token for its one use; False when it was used already (a replay)."""
    now = utcnow()
    claimed = (OAuthToken.update(refreshed_at=now)
               .where(OAuthToken.id == record.id, OAuthToken.refreshed_at.is_null()).execute())
    if claimed:
        OAuthGrant.update(last_used_at=now).where(OAuthGrant.id == record.grant_id).execute()
    return bool(claimed)


def revoke(grant_id: int) -> bool:
    """End a grant at once: every token of it stops working. False if there is no such active
    grant."""
    return bool(OAuthGrant.update(revoked_at=utcnow())
                .where(OAuthGrant.id == grant_id, OAuthGrant.revoked_at.is_null()).execute())


def authenticate(access_token: str, audience: str) -> OAuthGrant | None:
    """The active grant an unexpired access token for `audience` belongs to (with its site)."""
    now = utcnow()
    grant = (OAuthGrant.select(OAuthGrant, Site).join(Site).switch(OAuthGrant)
             .join(OAuthToken)
             .where(OAuthToken.access_hash == hash_key(access_token),
                    OAuthToken.access_expires_at > now, OAuthGrant.revoked_at.is_null(),
                    OAuthGrant.resource == audience)
             .get_or_none())
    if grant is not None and _stale(grant.last_used_at, now):
        OAuthGrant.update(last_used_at=now).where(OAuthGrant.id == grant.id).execute()
    return grant


def _stale(last_used_at: datetime | None, now: datetime) -> bool:
    return last_used_at is None or now - last_used_at >= LAST_USED_PRECISION


def active_grants(site: Site) -> list[OAuthGrant]:
    """A site's grants not revoked, oldest first, with their clients."""
    return list(OAuthGrant.select(OAuthGrant, OAuthClient).join(OAuthClient)
                .where(OAuthGrant.site == site, OAuthGrant.revoked_at.is_null())
                .order_by(OAuthGrant.created_at, OAuthGrant.id))
