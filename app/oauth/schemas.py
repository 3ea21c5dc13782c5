"""The OAuth endpoints' documents and forms as the OpenAPI document describes them
(blueprints/oauth.py); the client metadata of a registration is app.oauth.metadata's."""
from marshmallow import EXCLUDE, Schema, fields, validate

from app.oauth import public

AUTHORIZATION_PARAMETERS = ("response_type", "client_id", "redirect_uri", "code_challenge",
                            "code_challenge_method", "state", "scope", "resource")
STRING_LIST = {"type": "array", "items": {"type": "string"}}
RESOURCE_METADATA = {"type": "object", "required": ["resource", "authorization_servers"],
                     "properties": {"resource": {"type": "string"},
                                    "authorization_servers": STRING_LIST,
                                    "scopes_supported": STRING_LIST,
                                    "bearer_methods_supported": STRING_LIST,
                                    "resource_name": {"type": "string"}}}
SERVER_METADATA = {"type": "object", "required": ["issuer", "authorization_endpoint",
                                                  "token_endpoint"],
                   "properties": {name: {"type": "string"} for name in (
                       "issuer", "authorization_endpoint", "token_endpoint",
                       "registration_endpoint", "revocation_endpoint")}}


class OAuthErrorSchema(Schema):
    error = fields.String(required=True, metadata={
        "description": "invalid_request, invalid_client, invalid_grant, unauthorized_client, "
                       "unsupported_grant_type, invalid_scope, invalid_redirect_uri, "
                       "invalid_client_metadata, temporarily_unavailable; or a sentence (a body "
                       "that is not JSON, a rate limit)."})
    error_description = fields.String(metadata={"description": "One sentence."})


class TokenRequestSchema(Schema):
    class Meta:
        unknown = EXCLUDE  # other parameters are ignored (RFC 6749 section 3.1)

    grant_type = fields.String(required=True, validate=validate.OneOf(
        ["authorization_code", "refresh_token"]))
    client_id = fields.String(required=True)
    code = fields.String(metadata={"description": "authorization_code: the code (10 minutes, "
                                                  "once)."})
    redirect_uri = fields.String(metadata={"description": "authorization_code: as authorized."})
    code_verifier = fields.String(metadata={"description": "authorization_code: PKCE (S256)."})
    refresh_token = fields.String(metadata={"description": "refresh_token: rotates."})
    resource = fields.String(metadata={"description": "Optional: PUBLIC/api/mcp."})
    scope = fields.String(metadata={"description": "Optional: stats:read."})


class TokenSchema(Schema):
    access_token = fields.String(required=True, metadata={"description": "1 hour."})
    token_type = fields.String(required=True, validate=validate.Equal("Bearer"))
    expires_in = fields.Integer(required=True)
    refresh_token = fields.String(required=True, metadata={"description": "30 days unused."})
    scope = fields.String(required=True, validate=validate.Equal(public.SCOPE))


class RevocationRequestSchema(Schema):
    class Meta:
        unknown = EXCLUDE  # other parameters are ignored (RFC 6749 section 3.1)

    token = fields.String(metadata={"description": "An access or refresh token of the client."})
    token_type_hint = fields.String()
    client_id = fields.String()


class ConsentFormSchema(Schema):
    class Meta:
        unknown = EXCLUDE  # other parameters are ignored (RFC 6749 section 3.1)

    connect_code = fields.String(metadata={"description": "From `flask agents connect`."})
    decision = fields.String(required=True, validate=validate.OneOf(["allow", "deny"]))
    csrf_token = fields.String(required=True, metadata={
        "description": "As the consent page gave it, with the authorization request's "
                       "parameters (hidden fields) and the browser's cookie."})


# What the authorization endpoint refuses, declared (a request the document calls valid names a
# client, its redirect URI and this server's resource, which a fuzzer cannot know: see
# tests/system/test_contract.py). PKCE's challenge: RFC 7636 section 4.2.
AUTHORIZATION_SCHEMAS = {
    "response_type": ({"type": "string", "enum": ["code"]}, True),
    "client_id": ({"type": "string", "minLength": 1}, True),
    "redirect_uri": ({"type": "string", "minLength": 1}, False),
    "code_challenge": ({"type": "string", "pattern": "^[A-Za-z0-9._~-]{43,128}$"}, True),
    "code_challenge_method": ({"type": "string", "enum": ["S256"]}, True),
    "state": ({"type": "string"}, False),
    "scope": ({"type": "string", "enum": [public.SCOPE, ""],
               "description": f"Empty or left out: {public.SCOPE}."}, False),
    "resource": ({"type": "string", "minLength": 1,
                  "description": "This server's /api/mcp URL (its protected-resource "
                                 "metadata names it)."}, False),
}
QUERY = tuple({"name": name, "in": "query", "schema": AUTHORIZATION_SCHEMAS[name][0],
               "required": AUTHORIZATION_SCHEMAS[name][1]} for name in AUTHORIZATION_PARAMETERS)
