"""Which redirect URIs a client may have: the rule, stated once as three patterns.

A redirect URI is `https:` anywhere; `http:` only to a loopback host (127.0.0.1, [::1],
localhost; any port, RFC 8252 section 7.3); or a private-use scheme of a native app (RFC 8252
section 7.1, e.g. `cursor://...`). Never with a fragment. Only the characters RFC 3986 allows
in a URI, so a redirect URI is safe as it is in a Location header and in HTML. At most
MAX_LENGTH (1,000) characters: a native app's or a web client's callback is far shorter, and
each URI is kept as long as the client is.

A private-use scheme is any but those a browser itself handles (NOT_PRIVATE_USE), which an
owner's browser would open in place of an app: http(s) and ws(s), which have rules of their own
above; what runs or shows content of its own (`javascript:`, `vbscript:`, `data:`, `blob:`,
`filesystem:`); local files and archives (`file:`, `jar:`); the source view (`view-source:`);
the browsers' internal and extension pages (`about:`, `chrome:`, `chrome-extension:`,
`chrome-untrusted:`, `devtools:`, `edge:`, `brave:`, `opera:`, `vivaldi:`, `moz-extension:`,
`resource:`, `safari-web-extension:`, `ms-browser-extension:`); Android's `intent:`, which
opens any app with any data; and `ftp:`. Schemes are matched in lower case: a private-use
scheme is written in lower case, so one spelled otherwise (`JavaScript:`) is refused anyway.

The same patterns are the OpenAPI document's rule (`JSON_SCHEMA`) and the server's
(`is_allowed`): the server matches with `re.fullmatch`, JSON Schema with `^...$` (no pattern uses
`\\s` or anything else that the two regular-expression dialects read differently).
"""
import re
from typing import Any
from urllib.parse import urlsplit

# What may follow the host: a path and a query of RFC 3986's characters ('#' excluded).
_REST = r"(?:[/?][A-Za-z0-9\-._~:/?\[\]@!$&'()*+,;=%]*)?"
_PORT = r"(?::[0-9]{1,5})?"
HTTPS = rf"^https://(?:[A-Za-z0-9\-.]+|\[[0-9A-Fa-f:.]+\]){_PORT}{_REST}$"
LOOPBACK = rf"^http://(?:127\.0\.0\.1|\[::1\]|localhost){_PORT}{_REST}$"
PRIVATE_USE = r"^[a-z][a-z0-9+\-.]*:[A-Za-z0-9\-._~:/?\[\]@!$&'()*+,;=%]+$"
# Schemes that are no native app's, refused under the private-use rule.
NOT_PRIVATE_USE = (r"^(?:https?|wss?|javascript|vbscript|data|blob|filesystem|file|jar|"
                   r"view-source|about|chrome|chrome-extension|chrome-untrusted|devtools|edge|"
                   r"brave|opera|vivaldi|moz-extension|resource|safari-web-extension|"
                   r"ms-browser-extension|intent|ftp):")
MAX_LENGTH = 1000
MAX_URIS = 10

JSON_SCHEMA: dict[str, Any] = {
    "anyOf": [{"pattern": HTTPS}, {"pattern": LOOPBACK},
              {"pattern": PRIVATE_USE, "not": {"pattern": NOT_PRIVATE_USE}}],
}
RULE = ("a redirect URI must be https:, http: to 127.0.0.1, [::1] or localhost, or a native "
        "app's own scheme (not one a browser handles itself, such as javascript:, data:, file:, "
        "view-source:, jar: or chrome:), without a fragment")

_HTTPS, _LOOPBACK = re.compile(HTTPS), re.compile(LOOPBACK)
_PRIVATE_USE, _NOT_PRIVATE_USE = re.compile(PRIVATE_USE), re.compile(NOT_PRIVATE_USE)


def is_allowed(uri: str) -> bool:
    if len(uri) > MAX_LENGTH:
        return False
    if _HTTPS.fullmatch(uri) or _LOOPBACK.fullmatch(uri):
        return True
    return bool(_PRIVATE_USE.fullmatch(uri)) and not _NOT_PRIVATE_USE.match(uri)


def destination(uri: str) -> str:
    """Where a redirect URI sends the owner, as they know it: a web host (claude.ai), or a
    native app's scheme and name (cursor://anysphere.cursor-retrieval)."""
    parts = urlsplit(uri)
    if parts.scheme in ("http", "https"):
        return parts.netloc
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else f"{parts.scheme}:"
