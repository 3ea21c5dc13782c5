"""CORS: one builder of the headers, in two modes, and the Origin check of the site mode.

Site mode (the tracking endpoints, `enable`): a browser request carries Origin; it is accepted
only from the site's domain or a subdomain (hosts compared, scheme and port ignored). Requests
without Origin are backends: allowed. Preflights carry no key, so they cannot be tied to a site:
they are answered for any origin, and the real request is checked once its key names the site.
A refused origin's 403 carries Access-Control-Allow-Origin too, so that the page (and its owner,
in the console) can read why: without it the browser shows only "blocked by CORS policy". It
reveals nothing else: the key check before it answers every origin alike (unknown key, 401), and
check_origin raises before quota, limits, body or storage are reached.

Public mode (OAuth's discovery documents and POST endpoints, `enable_public`): any origin, no
cookies, so that a browser-based client (the MCP Inspector) calls them from its own page.
"""
from urllib.parse import urlsplit

from flask import Blueprint, Response, g, request

from app.web.errors import ApiError
from models.ingest_tally import REJECTED_403_ORIGIN

ALLOWED_HEADERS = "X-API-Key, Authorization, Content-Type, Content-Encoding"
PUBLIC_ALLOWED_HEADERS = "Authorization, Content-Type, MCP-Protocol-Version"
ALLOWED_METHODS = "GET, POST, OPTIONS"
PREFLIGHT_MAX_AGE = "86400"


def origin_host(origin: str) -> str | None:
    try:
        return urlsplit(origin).hostname
    except ValueError:
        return None


def origin_allowed(origin: str, domain: str) -> bool:
    host = origin_host(origin)
    return host is not None and (host == domain or host.endswith("." + domain))


def check_origin(domain: str) -> None:
    """403 for a browser request from another site; sets g.browser for later rules."""
    origin = request.headers.get("Origin")
    g.browser = origin is not None
    if origin is not None and not origin_allowed(origin, domain):
        g.origin_refused = True
        raise ApiError(403, f"Origin {origin!r} is not allowed: requests must come from "
                            f"{domain} or one of its subdomains.",
                       tally_reason=REJECTED_403_ORIGIN)


def add_headers(response: Response, allow_origin: str, allowed_headers: str) -> Response:
    """The CORS headers of an answer to `allow_origin` (an origin, or "*"): a preflight's
    methods, headers and lifetime, or the headers a script may read."""
    response.headers["Access-Control-Allow-Origin"] = allow_origin
    if allow_origin != "*":
        response.headers.add("Vary", "Origin")
    if request.method == "OPTIONS":
        response.headers["Access-Control-Allow-Methods"] = ALLOWED_METHODS
        response.headers["Access-Control-Allow-Headers"] = allowed_headers
        response.headers["Access-Control-Max-Age"] = PREFLIGHT_MAX_AGE
    elif not g.get("origin_refused"):  # a refusal has no Retry-After to show
        response.headers["Access-Control-Expose-Headers"] = "Retry-After"
    return response


def _site_headers(response: Response) -> Response:
    origin = request.headers.get("Origin")
    if origin is None:
        return response
    return add_headers(response, origin, ALLOWED_HEADERS)


def enable(blueprint: Blueprint) -> None:
    """Answer CORS (preflight and actual requests) on every route of `blueprint`, site mode."""
    blueprint.after_request(_site_headers)


def enable_public(blueprint: Blueprint, endpoints: set[str]) -> None:
    """Answer CORS for any origin on `endpoints` of `blueprint`, public mode."""

    def public_headers(response: Response) -> Response:
        if request.endpoint in endpoints:
            add_headers(response, "*", PUBLIC_ALLOWED_HEADERS)
        return response

    blueprint.after_request(public_headers)
