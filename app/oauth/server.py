"""The authorization server: Authlib's Flask AuthorizationServer with its authorization code
grant (RFC 6749 section 4.1), PKCE (RFC 7636), refresh token grant (section 6) and revocation
endpoint (RFC 7009), on egis's storage (app.oauth.grants, app.oauth.clients).

Written here rather than taken from Authlib, and why:
- RFC 8707 resource indicators (`check_resource`): Authlib has none.
- RFC 9207's `iss` on every redirect (`handle_response`): Authlib's IssuerParameter adds it to
  create_authorization_response's answers only, and egis also redirects the faults it finds when
  the consent page is first asked for.
- Fixed sentences where Authlib builds an error description from request values (a redirect URI,
  a response type): Authlib refuses to build a description holding a quote or a non-ASCII
  character (ValueError, a 500), and an echoed value is a value logged by clients.
- Reuse detection: Authlib deletes a used code and lets a refresh token be revoked; that a replay
  of either revokes the whole grant (RFC 6749 section 4.1.2, RFC 9700 section 4.14.2) is egis's.
Imported by the OAuth routes only, on their first call: a worker that only ingests never loads
Authlib.
"""
from typing import Any

from authlib.common.urls import add_params_to_uri
from authlib.consts import default_json_headers
from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.integrations.flask_oauth2.requests import FlaskOAuth2Payload
from authlib.oauth2.rfc6749 import OAuth2Error, OAuth2Request, grants
from authlib.oauth2.rfc6749.errors import (
    InsecureTransportError,
    InvalidClientError,
    InvalidGrantError,
    InvalidRequestError,
    UnsupportedResponseTypeError,
)
from authlib.oauth2.rfc6750 import BearerTokenGenerator
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7636 import CodeChallenge
from flask import Response, request

from app.oauth import clients, documents
from app.oauth import grants as store
from app.oauth.fetches import BusyError
from app.oauth.public import SCOPE, public_url, resource

HTTPS_NEEDED = ("OAuth needs HTTPS: serve egis over https (and set EGIS_PUBLIC_URL to its https "
                "address).")
REPLAYED_CODE = "This code was used before: every token issued from it is revoked."
REPLAYED_REFRESH = ("This refresh token was used before: the grant is revoked; connect the "
                    "agent again.")
DESCRIPTIONS = {  # for the errors Authlib raises without a description
    "invalid_request": "The request lacks a parameter or has one that is not valid.",
    "invalid_client": "The client_id is unknown.",
    "invalid_grant": ("The code or refresh token is unknown, expired, used, or was issued to "
                      "another client."),
    "unsupported_grant_type": ("Only the authorization_code and refresh_token grant types are "
                               "supported."),
    "invalid_scope": f"The only scope is {SCOPE}.",
    "unauthorized_client": "This client may not use this grant type.",
}


class TemporarilyUnavailableError(OAuth2Error):
    """A client metadata document is needed while this worker fetches as many as it may at
    once (app.oauth.fetches): 503, to be tried again in a moment."""

    error = "temporarily_unavailable"
    status_code = 503

    def __init__(self) -> None:
        super().__init__(documents.BUSY)

    def get_headers(self) -> list[tuple[str, str]]:
        return [*super().get_headers(), ("Retry-After", str(documents.BUSY_RETRY_SECONDS))]


class Request(OAuth2Request):
    """Authlib's Flask request (FlaskOAuth2Request), seen at PUBLIC: Authlib checks that the
    URI is https (or loopback), and behind a proxy egis may be asked on plain http."""

    def __init__(self) -> None:
        super().__init__(request.method, public_url() + request.path, headers=request.headers)
        self._request = request
        self.payload = FlaskOAuth2Payload(request)

    @property
    def args(self) -> Any:
        return self._request.args

    @property
    def form(self) -> Any:
        return self._request.form


class Code:
    """An authorization code as Authlib's grant and PKCE check read it."""

    def __init__(self, record: Any) -> None:
        self.record = record
        self.code_challenge = record.code_challenge
        self.code_challenge_method = record.code_challenge_method

    def get_redirect_uri(self) -> str:
        return self.record.redirect_uri

    def get_scope(self) -> str:
        return self.record.scope


class Token:
    """A token pair as Authlib's refresh grant and revocation endpoint read it."""

    def __init__(self, record: Any) -> None:
        self.record = record

    def check_client(self, client: clients.Client) -> bool:
        return self.record.grant.client_id == client.record.id

    def get_scope(self) -> str:
        return self.record.grant.scope


def check_resource(grant: grants.BaseGrant, *_args: Any) -> None:
    """RFC 8707: a `resource`, when sent, is the one this server serves (authorization) or the
    one the code or refresh token was issued for (token)."""
    sent = grant.request.payload.datalist.get("resource", [])
    if not sent:
        return
    redeemed = grant.request.authorization_code or grant.request.refresh_token
    expected = redeemed.record.resource if isinstance(redeemed, Code) else (
        redeemed.record.grant.resource if redeemed is not None else resource())
    if len(sent) == 1 and sent[0] == expected:
        return
    description = f"The resource must be {expected}."
    if redeemed is not None:
        raise InvalidGrantError(description)
    raise OAuth2Error(description, error="invalid_target")


class S256Only(CodeChallenge):
    """PKCE required, S256 only."""

    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]  # noqa: RUF012 - Authlib's class attribute

    def validate_code_challenge(self, grant: grants.BaseGrant, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("A code_challenge is required (PKCE, method S256).")
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("code_challenge_method must be S256; plain is refused.")
        super().validate_code_challenge(grant, redirect_uri)


class CodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["none"]  # noqa: RUF012 - Authlib's class attribute

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.register_hook("after_validate_authorization_request_payload", check_resource)
        self.register_hook("before_create_token_response", check_resource)

    @staticmethod
    def validate_authorization_redirect_uri(request: OAuth2Request, client: Any) -> str:
        sent = request.payload.redirect_uri
        if sent:
            if not client.check_redirect_uri(sent):
                raise InvalidRequestError("The redirect_uri is not one this client registered.")
            return sent
        default = client.get_default_redirect_uri()
        if default is None:
            raise InvalidRequestError("A redirect_uri is required: the client has several.")
        return default

    def create_authorization_response(self, redirect_uri: str, grant_user: Any) -> Any:
        self.allowed_redirect_uri = redirect_uri
        return super().create_authorization_response(redirect_uri, grant_user)

    def save_authorization_code(self, code: str, request: OAuth2Request) -> None:
        data = request.payload.data
        store.save_code(code, store.CodeRequest(
            site=request.user, client=request.client.record,
            redirect_uri=self.allowed_redirect_uri, scope=SCOPE, resource=resource(),
            code_challenge=data["code_challenge"],
            code_challenge_method=data["code_challenge_method"]))

    def query_authorization_code(self, code: str, client: clients.Client) -> Code | None:
        record = store.find_code(code)
        if record is None or record.client_id != client.record.id:
            return None
        if record.used_at is not None:
            store.replayed_code(record)
            raise InvalidGrantError(REPLAYED_CODE)
        if store.is_past(record.expires_at):
            raise InvalidGrantError("This code has expired: a code is valid 10 minutes.")
        return Code(record)

    def authenticate_user(self, authorization_code: Code) -> Any:
        grant = store.redeem_code(authorization_code.record)
        if grant is None:  # redeemed by a concurrent request in the meantime
            store.replayed_code(authorization_code.record)
            raise InvalidGrantError(REPLAYED_CODE)
        return grant

    def delete_authorization_code(self, authorization_code: Code) -> None:
        """Kept, marked used (`authenticate_user`): a second use must be recognized."""


class RefreshGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["none"]  # noqa: RUF012 - Authlib's class attribute
    INCLUDE_NEW_REFRESH_TOKEN = True  # rotation

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.register_hook("before_create_token_response", check_resource)

    def authenticate_refresh_token(self, refresh_token: str) -> Token | None:
        record = store.find_refresh(refresh_token)
        if record is None:
            return None
        if record.grant.revoked_at is not None:
            raise InvalidGrantError("This grant was revoked: connect the agent again.")
        if record.refreshed_at is not None:
            store.revoke(record.grant_id)
            raise InvalidGrantError(REPLAYED_REFRESH)
        if store.is_past(record.refresh_expires_at):
            raise InvalidGrantError("This refresh token lapsed after 30 days unused: connect "
                                    "the agent again.")
        return Token(record)

    def authenticate_user(self, refresh_token: Token) -> Any:
        if not store.rotate(refresh_token.record):  # rotated by a concurrent request
            store.revoke(refresh_token.record.grant_id)
            raise InvalidGrantError(REPLAYED_REFRESH)
        return refresh_token.record.grant

    def revoke_old_credential(self, refresh_token: Token) -> None:
        """Done: `authenticate_user` marked it used, so that a replay is recognized."""


class Revocation(RevocationEndpoint):
    """RFC 7009, answered 200 whatever is sent: an access or refresh token of the client that
    sends it ends its grant; anything else changes nothing."""

    CLIENT_AUTH_METHODS = ["none"]  # noqa: RUF012 - Authlib's class attribute

    def authenticate_endpoint_client(self, request: OAuth2Request) -> clients.Client:
        """The client as stored, never fetched: a client egis has no row of has no token to
        revoke, and a revocation request must not make egis fetch anything."""
        client_id = request.payload.client_id
        client = clients.stored(client_id) if client_id else None
        if client is None:
            raise InvalidClientError()
        request.client = client
        return client

    def query_token(self, token_string: str, token_type_hint: str | None) -> Token | None:
        record = store.find_token(token_string)
        return Token(record) if record is not None else None

    def revoke_token(self, token: Token, request: OAuth2Request) -> None:
        store.revoke(token.record.grant_id)

    def create_endpoint_response(self, request: OAuth2Request) -> tuple[int, Any, list]:
        try:
            return super().create_endpoint_response(request)
        except OAuth2Error:  # whatever was sent, as RFC 7009 answers it
            return 200, {}, default_json_headers


def _access_token(**_context: Any) -> str:
    return store.new_secret(store.access_prefix())


def _refresh_token(**_context: Any) -> str:
    return store.new_secret(store.refresh_prefix())


class Server(AuthorizationServer):
    def __init__(self) -> None:
        super().__init__()
        self.scopes_supported = [SCOPE]
        lifetime = int(store.ACCESS_LIFETIME.total_seconds())
        self.register_token_generator("default", BearerTokenGenerator(
            _access_token, _refresh_token, lambda _client, _grant_type: lifetime))
        self.register_grant(CodeGrant, [S256Only(required=True)])
        self.register_grant(RefreshGrant)
        self.register_endpoint(Revocation)

    def query_client(self, client_id: str) -> clients.Client | None:
        """The client; its metadata document's faults as OAuth errors, told the same way
        whatever went wrong (app.oauth.documents)."""
        try:
            return clients.find(client_id)
        except documents.MalformedURLError:
            raise InvalidRequestError(documents.MALFORMED) from None
        except BusyError:
            raise TemporarilyUnavailableError from None
        except documents.DocumentError:
            raise InvalidClientError(description=documents.REFUSAL) from None

    def save_token(self, token: dict[str, Any], request: OAuth2Request) -> None:
        store.save_tokens(request.user.id, token["access_token"], token["refresh_token"])

    def create_oauth2_request(self, _request: Any) -> OAuth2Request:
        try:
            return Request()
        except InsecureTransportError:
            raise InvalidRequestError(HTTPS_NEEDED) from None

    def get_authorization_grant(self, request: OAuth2Request) -> grants.BaseGrant:
        if request.payload.response_type == "code":
            return super().get_authorization_grant(request)
        redirect_uri = None  # sent back to only when the client and the URI are known
        client_id, sent = request.payload.client_id, request.payload.redirect_uri
        client = self.query_client(client_id) if client_id else None
        if client is not None:
            redirect_uri = (sent if client.check_redirect_uri(sent) else None) if sent else (
                client.get_default_redirect_uri())
        raise UnsupportedResponseTypeError(
            request.payload.response_type, description="Only response_type=code is supported.",
            redirect_uri=redirect_uri)

    def handle_error_response(self, request: Any, error: OAuth2Error) -> Response:
        # Authlib's own invalid_client sentence lists its method names: said in words instead.
        if not error.description or (error.error == "invalid_client"
                                     and "methods" in str(error.description)):
            error.description = DESCRIPTIONS.get(error.error, "The request was refused.")
        if error.error == "invalid_client":
            error.status_code = 401
        return super().handle_error_response(request, error)

    def handle_response(self, status_code: int, payload: Any, headers: list) -> Response:
        """Every redirect back to the client says who sends it (RFC 9207)."""
        headers = [(name, add_params_to_uri(value, [("iss", public_url())]))
                   if name == "Location" else (name, value) for name, value in headers]
        return super().handle_response(status_code, payload, headers)

    def token_response(self) -> Response:
        try:
            return self.create_token_response()
        except InvalidRequestError as error:  # not https (create_oauth2_request)
            return self.handle_error_response(None, error)

    def revocation_response(self) -> Response:
        try:
            return self.create_endpoint_response(Revocation.ENDPOINT_NAME)
        except InvalidRequestError:  # not https: nothing to revoke there
            return self.handle_response(200, {}, default_json_headers)


SERVER = Server()
