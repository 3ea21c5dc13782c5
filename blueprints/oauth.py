"""Agents connected by OAuth 2.1: discovery, registration, authorization (the consent page),
tokens and revocation. The work is app.oauth's; Authlib (app.oauth.server) and the consent page
are imported on the first call, so that a worker that only ingests never loads them (+0.7 MiB
of Python allocations otherwise: bench/README.md, "The OAuth machinery").

The discovery documents and the three POST endpoints answer CORS for any origin (no cookies):
a browser-based client (the MCP Inspector) calls them from its own page. The authorization
endpoint is a page for a person and answers in HTML, its faults and rate limit too.
"""
from flask import Blueprint, Response, jsonify, request

from app.oauth import public, registration
from app.oauth.metadata import ClientInformationSchema, ClientMetadataSchema
from app.oauth.schemas import (
    QUERY,
    RESOURCE_METADATA,
    SERVER_METADATA,
    ConsentFormSchema,
    OAuthErrorSchema,
    RevocationRequestSchema,
    TokenRequestSchema,
    TokenSchema,
)
from app.web import cors
from app.web.bodies import raw_body
from app.web.errors import ApiError, render
from app.web.limits import OAUTH, limited
from app.web.openapi import Media, documented

bp = Blueprint("oauth", __name__)

CORS_ENDPOINTS = {"oauth.resource_metadata", "oauth.server_metadata", "oauth.register",
                  "oauth.token", "oauth.revoke"}
HTML = Media("text/html", {"type": "string"})

cors.enable_public(bp, CORS_ENDPOINTS)


@bp.get(f"{public.RESOURCE_METADATA_PATH}{public.MCP_PATH}")
@bp.get(public.RESOURCE_METADATA_PATH)  # the same document where a client looks first
@documented("OAuth protected-resource metadata of /api/mcp (RFC 9728)",
            responses={200: (RESOURCE_METADATA, "Where to get a token for /api/mcp."),
                       429: (OAuthErrorSchema, "Rate limited (per client IP).")},
            tags=("oauth",))
@limited(OAUTH)
def resource_metadata() -> Response:
    return jsonify(public.resource_metadata())


@bp.get(public.SERVER_METADATA_PATH)
@documented("OAuth authorization-server metadata (RFC 8414)",
            responses={200: (SERVER_METADATA, "The endpoints and what they support."),
                       429: (OAuthErrorSchema, "Rate limited (per client IP).")},
            tags=("oauth",))
@limited(OAUTH)
def server_metadata() -> Response:
    return jsonify(public.server_metadata())


@bp.post("/oauth/register")
@documented("Register a public OAuth client (RFC 7591)", body=ClientMetadataSchema,
            responses={201: (ClientInformationSchema, "Registered."),
                       400: (OAuthErrorSchema, "invalid_redirect_uri, or "
                                               "invalid_client_metadata (a body that is not a "
                                               "JSON object too)."),
                       413: (OAuthErrorSchema, "Body too large."),
                       415: (OAuthErrorSchema, "Not JSON."),
                       429: (OAuthErrorSchema, "Rate limited: per client IP, or registrations "
                                               "in all in 24 hours (error_description: when).")},
            tags=("oauth",))
@limited(OAUTH)
def register() -> tuple[Response, int]:
    return jsonify(registration.register(raw_body())), 201


@bp.get("/oauth/authorize")
@documented("The consent page (OAuth 2.1 authorization endpoint; HTML)", parameters=QUERY,
            responses={200: (HTML, "The consent page."),
                       302: (None, "Back to the client's redirect URI with error, "
                                   "error_description, state and iss."),
                       400: (HTML, "An unknown client, a redirect URI it does not have, or "
                                   "any fault of a client never allowed: a page, no redirect."),
                       429: (HTML, "Rate limited (per client IP)."),
                       503: (HTML, "Fetching 2 client metadata documents already: try again.")},
            tags=("oauth",))
@limited(OAUTH)
def authorize() -> Response:
    from app.oauth import consent

    return consent.page()


@bp.post("/oauth/authorize")
@documented("The owner's decision on the consent page (HTML form)",
            body=Media("application/x-www-form-urlencoded", ConsentFormSchema),
            responses={302: (None, "Back to the client's redirect URI: code, state and iss; "
                                   "or error=access_denied, state and iss."),
                       400: (HTML, "The page again (a wrong, used or expired code), or why the "
                                   "request cannot go on."),
                       403: (HTML, "A form this server did not give this browser (csrf_token), "
                                   "or older than 30 minutes: read no further."),
                       429: (HTML, "Too many wrong connect codes, or requests, from the "
                                   "client's address.")},
            tags=("oauth",))
@limited(OAUTH)
def decide() -> Response:
    from app.oauth import consent

    return consent.decide()


@bp.post("/oauth/token")
@documented("Exchange a code, or a refresh token, for tokens",
            body=Media("application/x-www-form-urlencoded", TokenRequestSchema),
            responses={200: (TokenSchema, "Tokens (Cache-Control: no-store)."),
                       400: (OAuthErrorSchema, "invalid_request, invalid_grant, "
                                               "unsupported_grant_type, invalid_scope."),
                       401: (OAuthErrorSchema, "invalid_client."),
                       429: (OAuthErrorSchema, "Rate limited (per client IP)."),
                       503: (OAuthErrorSchema, "temporarily_unavailable: try again.")},
            tags=("oauth",))
@limited(OAUTH)
def token() -> Response:
    from app.oauth.server import SERVER

    return SERVER.token_response()


@bp.post("/oauth/revoke")
@documented("Revoke a token and its grant (RFC 7009)",
            body=Media("application/x-www-form-urlencoded", RevocationRequestSchema,
                       required=False),
            responses={200: ({"type": "object"}, "Always, whether or not there was such a "
                                                 "token."),
                       429: (OAuthErrorSchema, "Rate limited (per client IP).")},
            tags=("oauth",))
@limited(OAUTH)
def revoke() -> Response:
    from app.oauth.server import SERVER

    return SERVER.revocation_response()


@bp.errorhandler(ApiError)
def _refused(error: ApiError) -> Response:
    if request.endpoint in ("oauth.authorize", "oauth.decide"):  # a person reads these
        from app.oauth import pages

        return pages.message(error.status, "This request was refused", error.message,
                             "Wait a moment and try again.", error.headers)
    return render(error.status, error.message, error.headers, **error.extra)
