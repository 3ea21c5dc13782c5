"""Where egis is seen from outside, and what tells an agent's host how to connect to it.

PUBLIC is EGIS_PUBLIC_URL or, when unset, the request's scheme and host (after
EGIS_TRUSTED_PROXIES): the OAuth issuer, and the base of the one resource, PUBLIC/api/mcp. The
documents are RFC 9728's protected-resource metadata and RFC 8414's authorization-server metadata;
the challenge is the WWW-Authenticate header of /api/mcp's 401 (RFC 6750, RFC 9728 section 5.1).
Host names are lowercased and default ports dropped, as the MCP SDK's pydantic URLs render them,
so that the issuer a client reads compares equal to the one it is sent back (RFC 9207).
"""
import re
from typing import Any
from urllib.parse import urlsplit

from flask import current_app, request

from app.web.errors import ApiError

SCOPE = "stats:read"
SCOPE_MEANING = "read this site's analytics; it cannot send or change data"
MCP_PATH = "/api/mcp"
RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource"
SERVER_METADATA_PATH = "/.well-known/oauth-authorization-server"
DEFAULT_PORTS = {"http": "80", "https": "443"}
HOST = re.compile(r"(?:[a-z0-9.\-]+|\[[0-9a-f:.]+\])(?::[0-9]{1,5})?")


# The OpenAPI document's security scheme for OAuth (URLs relative to the server).
OPENAPI_SCHEME = {"type": "oauth2", "description": "OAuth 2.1 with PKCE; docs/AGENTS.md.",
                  "flows": {"authorizationCode": {
                      "authorizationUrl": "/oauth/authorize", "tokenUrl": "/oauth/token",
                      "refreshUrl": "/oauth/token", "scopes": {SCOPE: SCOPE_MEANING}}}}


def public_url() -> str:
    """PUBLIC: a scheme and a host, without a path or a trailing slash."""
    configured = current_app.config["PUBLIC_URL"]
    if configured:
        parts = urlsplit(configured.strip())
        return _origin(parts.scheme, parts.netloc)
    return _origin(request.scheme, request.host)


def _origin(scheme: str, host: str) -> str:
    scheme, host = scheme.lower(), host.lower()
    if not HOST.fullmatch(host):
        raise ApiError(400, "The Host header is not a host name.")
    name, _, port = host.rpartition(":") if not host.endswith("]") else (host, "", "")
    if port and DEFAULT_PORTS.get(scheme) == port:
        host = name
    return f"{scheme}://{host}"


def resource() -> str:
    """The MCP endpoint as the audience of every access token."""
    return public_url() + MCP_PATH


def resource_metadata() -> dict[str, Any]:
    """RFC 9728 protected-resource metadata of /api/mcp."""
    return {"resource": resource(), "authorization_servers": [public_url()],
            "scopes_supported": [SCOPE], "bearer_methods_supported": ["header"],
            "resource_name": "egis"}


def server_metadata() -> dict[str, Any]:
    """RFC 8414 authorization-server metadata."""
    base = public_url()
    return {
        "issuer": base,
        "authorization_endpoint": f"{base}/oauth/authorize",
        "token_endpoint": f"{base}/oauth/token",
        "registration_endpoint": f"{base}/oauth/register",
        "revocation_endpoint": f"{base}/oauth/revoke",
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": [SCOPE],
        "client_id_metadata_document_supported": True,
        "authorization_response_iss_parameter_supported": True,
    }


def challenge(invalid_token: bool) -> str:
    """The WWW-Authenticate value of /api/mcp's 401; `invalid_token` when a bearer credential
    was sent but is unknown, expired or revoked."""
    parameters = [f'resource_metadata="{public_url()}{RESOURCE_METADATA_PATH}{MCP_PATH}"',
                  f'scope="{SCOPE}"']
    if invalid_token:
        parameters.append('error="invalid_token"')
    return "Bearer " + ", ".join(parameters)
