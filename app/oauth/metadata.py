"""A client's metadata (RFC 7591), as registered at POST /oauth/register or read from a client
ID metadata document: one schema for both, which is also what /api/openapi.json says.

egis keeps public clients only, so `token_endpoint_auth_method` may only be "none" (absent means
"none": the MCP SDK's client leaves it out). Scope, grant and response types are what egis
supports whatever a client asks (RFC 7591 section 3.2.1 lets a server replace them); other
members (client_uri, logo_uri, contacts, ...) are not kept, so what a client may make egis keep
is its redirect URIs (app.oauth.redirects: 1-10, at most 1,000 characters each) and its name.

The name is shown on the consent page, as the client's own claim: at most 200 characters, and
none that changes how the rest reads without showing itself (HIDDEN, NAME_RULE): controls and
format characters (Unicode's Cc and Cf: the bidirectional overrides, embeddings and isolates
U+202A-202E and U+2066-2069, the marks U+200E, U+200F and U+061C, the zero-width U+200B-200D,
U+2060 and U+FEFF, the soft hyphen U+00AD, the tags U+E0001-E007F, ...), line and paragraph
separators (Zl, Zp), and the letters and marks that draw nothing (the Hangul fillers, the
Braille blank, the combining grapheme joiner, Khmer's inherent vowels). Variation selectors are
allowed: they choose how an emoji is drawn, and hide nothing; a name of spaces only is kept as
no name. The characters are listed as ranges, not looked up by category: the same list is the
OpenAPI document's pattern, and finding them in Unicode's tables took 0.33 s at every start
(tests/oauth/test_register.py checks the list against the tables of the Python it runs on).
"""
import re
from typing import Any

from marshmallow import EXCLUDE, Schema, ValidationError, fields, validate

from app.oauth import redirects
from app.oauth.public import SCOPE
from app.web.errors import ApiError
from app.web.schema import Text

GRANT_TYPES = ["authorization_code", "refresh_token"]
INVALID_REDIRECT_URI = "invalid_redirect_uri"
INVALID_CLIENT_METADATA = "invalid_client_metadata"
MAX_NAME = 200
HIDDEN_CATEGORIES = ("Cc", "Cf", "Zl", "Zp")
FORMATTING = (  # the code points of those categories in Unicode 14, as ranges (first, last)
    (0x0000, 0x001F), (0x007F, 0x009F), (0x00AD, 0x00AD), (0x0600, 0x0605), (0x061C, 0x061C),
    (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2), (0x180E, 0x180E),
    (0x200B, 0x200F), (0x2028, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F), (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x13438),
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F))
BLANK = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x2800, 0x2800),
         (0x3164, 0x3164), (0xFFA0, 0xFFA0))  # letters and marks that draw nothing
HIDDEN = FORMATTING + BLANK
_HIDDEN_CLASS = "".join(chr(first) if first == last else f"{chr(first)}-{chr(last)}"
                        for first, last in HIDDEN)
NAME_PATTERN = f"^[^{_HIDDEN_CLASS}]*$"  # what the OpenAPI document says
_HIDDEN_CHARACTER = re.compile(f"[{_HIDDEN_CLASS}]")
NAME_RULE = "no control, direction or invisible characters"


def _visible_name(name: str) -> None:
    hidden = _HIDDEN_CHARACTER.search(name)
    if hidden is not None:
        raise ValidationError(f"Not allowed: {NAME_RULE} (it holds U+{ord(hidden.group()):04X}).")


def _allowed_redirect(uri: str) -> None:
    if not redirects.is_allowed(uri):
        raise ValidationError(f"Not allowed: {redirects.RULE}.")


class ClientMetadataSchema(Schema):
    class Meta:
        unknown = EXCLUDE  # RFC 7591: metadata the server does not understand is ignored

    redirect_uris = fields.List(
        fields.String(validate=[validate.Length(max=redirects.MAX_LENGTH), _allowed_redirect],
                      metadata=redirects.JSON_SCHEMA),
        required=True, validate=validate.Length(min=1, max=redirects.MAX_URIS),
        metadata={"description": f"1-{redirects.MAX_URIS} URIs: https:, http: to a loopback "
                                 "host (any port), or a native app's own scheme; no fragment."})
    token_endpoint_auth_method = fields.String(validate=validate.OneOf(["none"]), metadata={
        "description": "Public clients only: none (the default here)."})
    grant_types = fields.List(fields.String(validate=validate.OneOf(GRANT_TYPES)))
    response_types = fields.List(fields.String(validate=validate.OneOf(["code"])))
    # A String, not app.web.schema' Text: the pattern refuses NUL (Text's one rule) with the rest.
    client_name = fields.String(validate=[validate.Length(max=MAX_NAME), _visible_name], metadata={
        "description": f"Shown on the consent page: at most {MAX_NAME} characters, {NAME_RULE}.",
        "pattern": NAME_PATTERN})
    scope = Text(validate=validate.Length(max=1000), metadata={
        "description": f"Registered as {SCOPE} whatever is asked (the one scope)."})


class ClientInformationSchema(Schema):
    """The registration's answer (RFC 7591 section 3.2.1)."""

    client_id = fields.String(required=True)
    client_id_issued_at = fields.Integer(required=True)
    redirect_uris = fields.List(fields.String(), required=True)
    token_endpoint_auth_method = fields.String(required=True, validate=validate.Equal("none"))
    grant_types = fields.List(fields.String(), required=True)
    response_types = fields.List(fields.String(), required=True)
    scope = fields.String(required=True, validate=validate.Equal(SCOPE))
    client_name = fields.String()


_SCHEMA = ClientMetadataSchema()


def load(data: Any) -> dict[str, Any]:
    """The metadata egis keeps from `data`; ApiError 400 (invalid_redirect_uri or
    invalid_client_metadata, with a one-sentence error_description) when it is not valid."""
    if not isinstance(data, dict):
        raise ApiError(400, INVALID_CLIENT_METADATA,
                       error_description="The client metadata must be a JSON object.")
    try:
        loaded = _SCHEMA.load(data)
    except ValidationError as error:
        raise refusal(error.messages) from None
    kept = {"redirect_uris": loaded["redirect_uris"], "token_endpoint_auth_method": "none",
            "grant_types": GRANT_TYPES, "response_types": ["code"], "scope": SCOPE}
    if loaded.get("client_name", "").strip():
        kept["client_name"] = loaded["client_name"]
    return kept


def columns(kept: dict[str, Any]) -> dict[str, Any]:
    """The OAuthClient columns of metadata `kept` (`load`'s): the name and the redirect URIs in
    columns of their own, the rest (the fixed grant types and scope) as `metadata`."""
    return {"client_name": kept.get("client_name"), "redirect_uris": kept["redirect_uris"],
            "grant_types": kept["grant_types"],
            "metadata": {name: value for name, value in kept.items()
                         if name not in ("client_name", "redirect_uris")}}


def refusal(messages: dict[str, Any]) -> ApiError:
    """The error for marshmallow's `messages`: about the redirect URIs first, as RFC 7591
    names that error apart."""
    if "redirect_uris" in messages:
        field, error = "redirect_uris", INVALID_REDIRECT_URI
    else:
        field, error = sorted(messages)[0], INVALID_CLIENT_METADATA
    return ApiError(400, error, error_description=f"{field}: {_first_message(messages[field])}")


def _first_message(messages: Any) -> str:
    while isinstance(messages, (dict, list)) and messages:
        messages = next(iter(messages.values())) if isinstance(messages, dict) else messages[0]
    return str(messages)
