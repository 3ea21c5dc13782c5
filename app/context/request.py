"""The visit context of the request being served: what a browser request's headers and its
batch's fingerprint say, derived once per request and stored with each of its events.

A backend's request (no Origin: g.browser is False, app.web.cors) gets none: its address and
User-Agent are the backend's, not a visitor's. The client address is request.remote_addr,
which ProxyFix has already taken from X-Forwarded-For when EGIS_TRUSTED_PROXIES says so.
"""
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from flask import Flask, current_app, g, request

from app.context import country, language, screen, user_agent

COUNTRY_LOOKUP = "egis_country_lookup"  # app.extensions key
# Requests of one visitor repeat the same headers and address: their context is derived once
# per worker (bounded; keys are cut to what the derivers read, so at most ~2.5 MiB).
CACHE_SIZE = 4096
MAX_LANGUAGE_ENTRY = 32  # the first Accept-Language entry is all language() reads
MAX_HINT = 32
MAX_ADDRESS = 45  # the longest IPv6 address text; anything longer is no address


@dataclass(frozen=True, slots=True)
class RequestContext:
    """The per-request visit columns (docs/ARCHITECTURE.md, "Visits"; None: unknown)."""

    country: str | None = None
    device: str | None = None
    browser: str | None = None
    browser_version: str | None = None
    os: str | None = None
    os_version: str | None = None
    language: str | None = None
    screen: str | None = None

    def columns(self) -> dict[str, str | None]:
        return {"country": self.country, "device": self.device, "browser": self.browser,
                "browser_version": self.browser_version, "os": self.os,
                "os_version": self.os_version, "language": self.language,
                "screen": self.screen}


NO_CONTEXT = RequestContext()


def init_app(app: Flask) -> None:
    """Open the country lookup (EGIS_GEOIP_DB's file, or the bundled registry data) once."""
    app.extensions[COUNTRY_LOOKUP] = country.lookup_for(app.config["GEOIP_DB"])


def request_context(fingerprint: Any = None) -> RequestContext:
    """This request's context; `fingerprint` is the batch's (None for a goal). Never raises
    for a header's content: what cannot be read is None."""
    if not g.get("browser"):
        return NO_CONTEXT
    environ = request.environ
    accept_language = environ.get("HTTP_ACCEPT_LANGUAGE")
    address = request.remote_addr
    return derive(
        (environ.get("HTTP_USER_AGENT") or "")[:user_agent.MAX_PARSED],
        (environ.get("HTTP_SEC_CH_UA_MOBILE") or "")[:MAX_HINT],
        (environ.get("HTTP_SEC_CH_UA_PLATFORM") or "")[:MAX_HINT],
        accept_language.partition(",")[0][:MAX_LANGUAGE_ENTRY] if accept_language else "",
        address if address and len(address) <= MAX_ADDRESS else None,
        screen.screen_class(fingerprint),
        current_app.extensions[COUNTRY_LOOKUP])


@lru_cache(maxsize=CACHE_SIZE)
def derive(user_agent_header: str, mobile_hint: str, platform_hint: str,
           first_language: str, address: str | None, screen_class: str | None,
           lookup: country.Lookup) -> RequestContext:
    """The context of these header values (cut as request_context cuts them), client address
    and screen class."""
    client = user_agent.describe(user_agent_header, mobile_hint, platform_hint)
    return RequestContext(
        country=country.country(address, lookup), device=client.device,
        browser=client.browser, browser_version=client.browser_version, os=client.os,
        os_version=client.os_version, language=language.language(first_language),
        screen=screen_class)
