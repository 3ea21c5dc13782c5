"""CORS for the tracking endpoints, and the Origin check that goes with it.

A browser request carries Origin; it is accepted only from the site's domain or a subdomain
(hosts compared, scheme and port ignored). Requests without Origin are backends: allowed.
Preflights carry no key, so they cannot be tied to a site: they are answered for any origin,
and the real request is checked once its key names the site.

A refused origin's 403 carries Access-Control-Allow-Origin too, so that the page (and its owner,
in the console) can read why: without it the browser shows only "blocked by CORS policy". It
reveals nothing else: the key check before it answers every origin alike (unknown key, 401), and
check_origin raises before quota, limits, body or storage are reached, so the refusal is all
such an origin reads.
"""
from urllib.parse import urlsplit

from flask import Blueprint, Response, g, request

from app.errors import ApiError
from models.ingest_tally import REJECTED_403_ORIGIN

ALLOWED_HEADERS = "X-API-Key, Authorization, Content-Type, Content-Encoding"
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


def _add_cors_headers(response: Response) -> Response:
    origin = request.headers.get("Origin")
    if origin is None:
        return response
    response.headers["Access-Control-Allow-Origin"] = origin
    response.headers.add("Vary", "Origin")
    if request.method == "OPTIONS":
        response.headers["Access-Control-Allow-Methods"] = ALLOWED_METHODS
        response.headers["Access-Control-Allow-Headers"] = ALLOWED_HEADERS
        response.headers["Access-Control-Max-Age"] = PREFLIGHT_MAX_AGE
    elif not g.get("origin_refused"):  # a refusal has no Retry-After to show
        response.headers["Access-Control-Expose-Headers"] = "Retry-After"
    return response


def enable(blueprint: Blueprint) -> None:
    """Answer CORS (preflight and actual requests) on every route of `blueprint`."""
    blueprint.after_request(_add_cors_headers)
