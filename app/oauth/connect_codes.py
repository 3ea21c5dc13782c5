"""One-time connect codes: how an owner without an account proves, on the consent page, that
they run this egis (`flask agents connect DOMAIN`).

A code is 80 random bits written as 16 characters of Crockford's base32 in four groups
(`K7QF-9XMB-2RTD-WP4H`): no I, L, O or U, so nothing is misread, and a typed I, L or O is read as
the digit it looks like. Case and dashes (or spaces) do not matter. It is valid 15 minutes, once,
and only its SHA-256 is stored.
"""
import secrets
from dataclasses import dataclass
from datetime import timedelta

from app.access.keys import hash_key
from models import ConnectCode, Site
from models.site import utcnow

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford's base32
LENGTH = 16  # 16 x 5 bits = 80 bits
GROUP = 4
LIFETIME = timedelta(minutes=15)
_LOOKALIKES = str.maketrans({"I": "1", "L": "1", "O": "0"})

WRONG = "wrong"
USED = "used"
EXPIRED = "expired"


@dataclass(frozen=True)
class Redeemed:
    """What a typed code turned out to be: the site it names, or why not (WRONG, USED,
    EXPIRED)."""

    site: Site | None = None
    refusal: str | None = None


def issue(site: Site) -> str:
    """A new code for `site`, formatted to be read out; only its digest is stored."""
    code = "".join(secrets.choice(ALPHABET) for _ in range(LENGTH))
    now = utcnow()
    ConnectCode.create(site=site, code_hash=hash_key(code), created_at=now,
                       expires_at=now + LIFETIME)
    return "-".join(code[i:i + GROUP] for i in range(0, LENGTH, GROUP))


def normalize(typed: str) -> str | None:
    """The code's 16 characters as issued, or None when `typed` cannot be a code."""
    code = "".join(typed.upper().split()).replace("-", "").translate(_LOOKALIKES)
    if len(code) != LENGTH or any(character not in ALPHABET for character in code):
        return None
    return code


def redeem(typed: str) -> Redeemed:
    """Use the code: the site it names, once. A code used concurrently is used once."""
    code = normalize(typed)
    record = (ConnectCode.select(ConnectCode, Site).join(Site)
              .where(ConnectCode.code_hash == hash_key(code)).get_or_none() if code else None)
    if record is None:
        return Redeemed(refusal=WRONG)
    now = utcnow()
    if record.used_at is not None:
        return Redeemed(refusal=USED)
    if record.expires_at <= now:
        return Redeemed(refusal=EXPIRED)
    claimed = (ConnectCode.update(used_at=now)
               .where(ConnectCode.id == record.id, ConnectCode.used_at.is_null()).execute())
    return Redeemed(site=record.site) if claimed else Redeemed(refusal=USED)
