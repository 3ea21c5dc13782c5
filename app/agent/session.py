"""The signed Mcp-Session-Id: what a handshake-era client declared, kept by the client.

egis keeps no session state. In the handshake revisions (2024-11-05 ... 2025-11-25) a client
declares its capabilities once, in `initialize`; the answer to a client that declared something
egis acts on (the chart apps, app.agent.apps) carries an `Mcp-Session-Id` that holds that
declaration, signed (HMAC-SHA256) with a secret of the installation (models.InstanceSecret,
shared by every worker and host through the database). The client sends the id back with every
request (the transport spec's MUST), so any worker reads the declaration from the request itself.
A client that declared nothing gets no id, and its answers stay exactly what they were.

The id: `e1.<payload>.<mac>`, base64url without padding; the payload is compact JSON with what
was declared and 12 random bytes (so that two ids are never equal, as the transport spec asks of
a session id), the MAC covers `e1.<payload>`. Only visible ASCII, as the spec requires. The id is
not bound to the key that opened the session: it grants nothing (each request is authenticated
on its own) and only says what the client can display, which any client may declare anyway.
"""
import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from app.runtime.secrets import instance_secret

HEADER = "mcp-session-id"  # as the protocol layer reads headers (lower case)
RESPONSE_HEADER = "Mcp-Session-Id"
_PREFIX = "e1"
_SECRET_NAME = "mcp-session"
_MAX_LENGTH = 512  # an id this service issues is ~110 characters


@dataclass(frozen=True)
class Declaration:
    """What the client declared that egis acts on."""

    apps: bool = False


NOTHING_DECLARED = Declaration()

def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SessionIds:
    """Issues and reads signed session ids; `secret` is asked for on first use."""

    def __init__(self, secret: Callable[[], bytes]) -> None:
        self._secret = secret

    def _mac(self, signed: str) -> bytes:
        digest = hmac.new(self._secret(), signed.encode("utf-8", "surrogatepass"), hashlib.sha256)
        return _b64(digest.digest()).encode()

    def issue(self, declaration: Declaration) -> str:
        payload = _b64(orjson.dumps({"apps": declaration.apps,
                                     "n": _b64(secrets.token_bytes(12))}))
        signed = f"{_PREFIX}.{payload}"
        return f"{signed}.{self._mac(signed).decode()}"

    def read(self, session_id: str) -> Declaration | None:
        """The declaration an id holds; None when this installation did not sign it (tampered,
        truncated, another installation's, or not an egis id at all)."""
        parts = session_id.split(".") if len(session_id) <= _MAX_LENGTH else []
        if len(parts) != 3 or parts[0] != _PREFIX:
            return None
        signed = f"{parts[0]}.{parts[1]}"
        if not hmac.compare_digest(self._mac(signed), parts[2].encode("utf-8", "surrogatepass")):
            return None
        try:
            payload = orjson.loads(_unb64(parts[1]))
        except (binascii.Error, ValueError):  # orjson.JSONDecodeError is a ValueError
            return None
        return Declaration(apps=payload.get("apps") is True) if isinstance(payload, dict) else None


def session_secret() -> bytes:
    """The installation's session secret, read from the database once per process."""
    return instance_secret(_SECRET_NAME)
