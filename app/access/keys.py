"""API keys: issuing, hashing and looking them up. Only SHA-256 digests are stored."""
import base64
import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from app.storage.db import primary_unavailable, read_database
from models import ApiKey, Site, database
from models.api_key import READ, SERVER, WRITE
from models.site import utcnow

HINT_LENGTH = 6  # characters of the random part shown in listings
HINT_ELLIPSIS = "…"


@dataclass(frozen=True)
class IssuedKey:
    key: str
    record: ApiKey


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def prefixes(config: Mapping[str, Any]) -> dict[str, str]:
    """Each kind's key prefix (`egis_`, `egiss_`, `egisr_` with EGIS_KEY_PREFIX=egis)."""
    return {WRITE: config["WRITE_KEY_PREFIX"], SERVER: config["SERVER_KEY_PREFIX"],
            READ: config["READ_KEY_PREFIX"]}


def kind_of(key: str, config: Mapping[str, Any]) -> str | None:
    """The kind a key's prefix announces. `egiss_` and `egisr_` start like `egis_` but are no
    write keys: no prefix starts another (the character after the common part differs)."""
    return next((kind for kind, prefix in prefixes(config).items() if key.startswith(prefix)),
                None)


def issue(site: Site, kind: str, prefix: str) -> IssuedKey:
    """Create a key for `site`; the returned plain key is shown once and never stored."""
    secret = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
    key = f"{prefix}{secret}"
    record = ApiKey.create(site=site, kind=kind, key_hash=hash_key(key),
                           hint=f"{prefix}{secret[:HINT_LENGTH]}{HINT_ELLIPSIS}")
    return IssuedKey(key, record)


def find(key: str) -> ApiKey | None:
    """The key's record, revoked or not."""
    return ApiKey.get_or_none(ApiKey.key_hash == hash_key(key))


def find_by_reference(reference: str) -> list[ApiKey]:
    """The keys `reference` names: a whole key, an id, or a hint as `flask keys list` shows it
    (with or without its ellipsis). Several only when two keys share a hint."""
    reference = reference.strip()
    if reference.isascii() and reference.isdigit():
        return list(ApiKey.select().where(ApiKey.id == int(reference)))
    record = find(reference)
    if record is not None:
        return [record]
    hint = f"{reference.removesuffix(HINT_ELLIPSIS)}{HINT_ELLIPSIS}"
    return list(ApiKey.select().where(ApiKey.hint == hint).order_by(ApiKey.id))


def revoke_record(record: ApiKey) -> None:
    """Revoke the key of `record` (no-op when it already is)."""
    if record.revoked_at is None:
        record.revoked_at = utcnow()
        record.save()


def revoke(key: str) -> ApiKey | None:
    """Revoke `key` (no-op when it already is); None when there is no such key."""
    record = find(key)
    if record is not None:
        revoke_record(record)
    return record


def _select_active(digest: str) -> ApiKey | None:
    return (ApiKey.select(ApiKey, Site).join(Site)
            .where(ApiKey.key_hash == digest, ApiKey.revoked_at.is_null())
            .get_or_none())


class KeyCache:
    """Per-process cache of key lookups, so most requests spend no query on auth.

    An entry lives `ttl` seconds: a revoked key (or a changed plan) takes effect within that.
    Unknown keys are cached too, so a flood of bad keys does not reach the database.
    """

    def __init__(self, ttl: float, max_entries: int = 10_000) -> None:
        self.ttl = ttl
        self.max_entries = max_entries
        self._entries: dict[str, tuple[float, ApiKey | None]] = {}
        self._lock = threading.Lock()

    def lookup(self, key: str, before_query: Callable[[], None] = lambda: None,
               on_miss: Callable[[], None] = lambda: None) -> ApiKey | None:
        """The active key record, or None. When the key is not in the cache, `before_query`
        runs before the database is asked, and `on_miss` after it, if it knows no such active
        key; either may raise, to refuse. An answer from the cache runs neither."""
        digest = hash_key(key)
        now = time.monotonic()
        entry = self._entries.get(digest)
        if entry is not None and entry[0] > now:
            return entry[1]
        before_query()
        record = _load_active(digest)
        with self._lock:
            if len(self._entries) >= self.max_entries:
                self._entries.clear()
            self._entries[digest] = (now + self.ttl, record)
        if record is None:
            on_miss()
        return record

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def _load_active(digest: str) -> ApiKey | None:
    replica = read_database() if primary_unavailable() else None
    if replica is None:
        record = _select_active(digest)
    else:  # a failover's seconds: the key as the read replica has it
        with replica.connection_context(), database.reading_from(replica):
            record = _select_active(digest)
    # The index found the row by digest; compare in constant time all the same.
    if record is None or not hmac.compare_digest(record.key_hash, digest):
        return None
    return record
