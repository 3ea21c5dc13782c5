"""The visit context of the request being served: what a browser request's headers and its
batch's fingerprint say, derived once per request and stored with each of its events.

A backend's request (no Origin: g.browser is False, app.cors) gets none: its address and
User-Agent are the backend's, not a visitor's. The client address is request.remote_addr,
which ProxyFix has already taken from X-Forwarded-For when EGIS_TRUSTED_PROXIES says so.
"""
from dataclasses import dataclass
from typing import Any

from flask import Flask, current_app, g, request

from app.visit import country, language, screen, user_agent

COUNTRY_LOOKUP = "egis_country_lookup"  # app.extensions key
COLUMNS = ("country", "device", "browser", "browser_version", "os", "os_version", "language",
           "screen")


@dataclass(frozen=True, slots=True)
class RequestContext:
    """The per-request visit columns of DESIGN.md's "Visit context" (None: unknown)."""

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
    headers = request.headers
    client = user_agent.describe(headers.get("User-Agent"), headers.get("Sec-CH-UA-Mobile"),
                                 headers.get("Sec-CH-UA-Platform"))
    return RequestContext(
        country=country.country(request.remote_addr, current_app.extensions[COUNTRY_LOOKUP]),
        device=client.device, browser=client.browser, browser_version=client.browser_version,
        os=client.os, os_version=client.os_version,
        language=language.language(headers.get("Accept-Language")),
        screen=screen.screen_class(fingerprint))
