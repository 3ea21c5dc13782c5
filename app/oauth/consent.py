"""GET and POST /oauth/authorize: the owner's consent, proved by a connect code.

GET checks the authorization request (Authlib's grant, app.oauth.server): a fault of the client
or its redirect URI is a 400 page, never a redirect; any other fault is sent back to the client
(error, error_description, state, iss) if an owner has allowed that client before, and is a
400 page too if not (RFC 9700 section 4.11.2): anyone may register a client with any https
redirect URI, and a stranger's faulty request redirected at once would make egis an open
redirector. A valid request gets the consent page. The page's form
carries the request's parameters and a CSRF token: a signature (itsdangerous, with a secret of
the installation) over those parameters and a random cookie of the browser, so that the form
is egis's own, for this request, posted from the browser it was shown in. POST checks it all
again, then denies (error=access_denied) or, with a connect code that is right, unused and not
expired, redirects with the code. A wrong code shows the page again, saying so; after
RATE_LIMIT_CONNECT_CODE wrong codes from one client address, a 429 page.
"""
import hashlib
import secrets
from datetime import datetime, timedelta
from typing import Any

import orjson
from authlib.oauth2.rfc6749 import OAuth2Error
from flask import Response, request
from itsdangerous import BadData, URLSafeSerializer

from app.oauth import clients, connect_codes, documents, pages, redirects
from app.oauth.public import SCOPE_MEANING, public_url
from app.oauth.server import SERVER, TemporarilyUnavailableError
from app.runtime.secrets import instance_secret
from app.web.errors import ApiError
from app.web.limits import CONNECT_CODE, count_against, refuse_if_spent
from models.oauth_client import DOCUMENT
from models.site import utcnow

PARAMETERS = ("response_type", "client_id", "redirect_uri", "scope", "state", "code_challenge",
              "code_challenge_method", "resource")
BROWSER_COOKIE = "egis_consent"
FORM_LIFETIME = timedelta(minutes=30)
NOTICES = {
    connect_codes.WRONG: "That connect code is wrong: check it, or make a new one.",
    connect_codes.USED: "That connect code was used already: make a new one.",
    connect_codes.EXPIRED: "That connect code has expired (codes last 15 minutes): make a new one.",
}
BACK_TO_APP = "Go back to the app you were connecting and start again from there."


def page() -> Response:
    """GET: the consent page, or the refusal."""
    try:
        grant = SERVER.get_consent_grant(end_user=None)
    except OAuth2Error as error:
        return _refused(error)
    return _consent_page(grant, 200)


def _told_the_client(error: OAuth2Error) -> bool:
    """Whether `error` goes back to the client: its redirect URI is known, and an owner has
    allowed the client before (a stranger is never redirected to)."""
    client = clients.stored(request.values.get("client_id", "")) if error.redirect_uri else None
    return client is not None and clients.has_been_granted(client)


def decide() -> Response:
    """POST: the owner's decision."""
    if request.args:  # the form sends every parameter in its body
        return pages.message(400, "This form was changed", "The request's parameters must be "
                             "in the form, not in the address.", BACK_TO_APP)
    if not _form_is_ours():  # first: a form egis did not give this browser is read no further
        return pages.message(403, "This form has expired", "The form is older than 30 minutes, "
                             "was changed, or was sent from another browser.", BACK_TO_APP)
    try:
        grant = SERVER.get_consent_grant(end_user=None)
    except OAuth2Error as error:
        return _refused(error)
    decision = request.form.get("decision")
    if decision == "deny":
        return SERVER.create_authorization_response(grant=grant, grant_user=None)
    if decision != "allow":
        return _consent_page(grant, 400, "Choose Allow or Deny.")
    try:
        refuse_if_spent(CONNECT_CODE)
        redeemed = connect_codes.redeem(request.form.get("connect_code", ""))
        if redeemed.refusal == connect_codes.WRONG:
            count_against(CONNECT_CODE)
    except ApiError as error:
        if error.status != 429:
            raise
        return pages.message(429, "Too many wrong codes", "Too many wrong connect codes came "
                             "from your address: wait a while before you try again.",
                             "Make a new code with .venv/bin/flask agents connect DOMAIN "
                             "meanwhile.",
                             error.headers)
    if redeemed.site is None:
        return _consent_page(grant, 400, NOTICES[redeemed.refusal])
    return SERVER.create_authorization_response(grant=grant, grant_user=redeemed.site)


def _refused(error: OAuth2Error) -> Response:
    if isinstance(error, TemporarilyUnavailableError):
        return pages.message(error.status_code, "Try again in a moment", str(error.description),
                             "Reload this page in a few seconds.",
                             {"Retry-After": str(documents.BUSY_RETRY_SECONDS)})
    if _told_the_client(error):
        return SERVER.handle_error_response(None, error)
    sentence = error.description or "The request to connect an app is not valid."
    return pages.message(400, "This app cannot connect", sentence,
                         "Nothing was shared. Tell the app's maker, or connect it again.")


def _consent_page(grant: Any, status: int, notice: str | None = None) -> Response:
    client = grant.request.client
    parameters = [(name, request.values[name]) for name in PARAMETERS if name in request.values]
    browser = request.cookies.get(BROWSER_COOKIE) or secrets.token_urlsafe(16)
    response = pages.render(
        "consent.html", status, title=f"Connect {client.name}", notice=notice,
        client_name=client.name, client_origin=_origin_note(client),
        redirect_host=redirects.destination(grant.redirect_uri), scope_meaning=SCOPE_MEANING,
        parameters=parameters, csrf_token=_serializer().dumps(
            {"browser": browser, "request": _digest(parameters),
             "issued": utcnow().isoformat()}))
    response.set_cookie(BROWSER_COOKIE, browser, httponly=True, samesite="Lax",
                        secure=public_url().startswith("https:"), path="/oauth/authorize")
    return response


def _form_is_ours() -> bool:
    try:
        signed = _serializer().loads(request.form.get("csrf_token", ""))
        issued = datetime.fromisoformat(signed["issued"])
    except (BadData, KeyError, TypeError, ValueError):
        return False
    parameters = [(name, request.form[name]) for name in PARAMETERS if name in request.form]
    return (utcnow() - issued <= FORM_LIFETIME and signed.get("request") == _digest(parameters)
            and bool(request.cookies.get(BROWSER_COOKIE))
            and secrets.compare_digest(str(signed.get("browser")),
                                       request.cookies[BROWSER_COOKIE]))


def _serializer() -> URLSafeSerializer:
    return URLSafeSerializer(instance_secret("consent"), salt="oauth-consent")


def _digest(parameters: list[tuple[str, str]]) -> str:
    return hashlib.sha256(orjson.dumps(parameters)).hexdigest()


def _origin_note(client: Any) -> str:
    if client.record.kind == DOCUMENT:
        return f"This app describes itself at {client.record.client_id}."
    return ("This app registered itself with egis: its name is its own claim; what you can "
            "trust is where egis sends you back.")
