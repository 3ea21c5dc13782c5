"""The HTML pages of the authorization endpoint: the consent page and the pages that refuse.

Rendered with Jinja2 (Flask's own) from app/oauth/templates, autoescaped. Every page is whole by
itself: one stylesheet inline, allowed by its hash in the Content-Security-Policy; no script, no
image, nothing fetched from elsewhere; a viewport for phones. It cannot be framed (X-Frame-Options
and frame-ancestors), is never cached and sends no Referer.

The policy has no form-action on purpose: Chromium applies form-action to the redirect that
follows a form's POST as well, so `form-action 'self'` blocks the 302 that sends the owner back to
the client's redirect URI (tests/oauth/test_consent_browser.py shows the redirect going through).
"""
import base64
import hashlib
from pathlib import Path
from typing import Any

from flask import Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

TEMPLATES = Path(__file__).parent / "templates"
STYLE = (TEMPLATES / "style.css").read_text()
_STYLE_HASH = base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()
POLICY = (f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; base-uri 'none'; "
          "frame-ancestors 'none'")
HEADERS = {
    "Content-Security-Policy": POLICY,
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
    "Pragma": "no-cache",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}

_environment = Environment(loader=FileSystemLoader(TEMPLATES),
                           autoescape=select_autoescape(default=True), auto_reload=False)


def render(template: str, status: int, headers: dict[str, str] | None = None,
           **context: Any) -> Response:
    html = _environment.get_template(template).render(style=Markup(STYLE), **context)
    response = Response(html, status=status, mimetype="text/html")
    response.headers.update({**HEADERS, **(headers or {})})
    return response


def message(status: int, title: str, sentence: str, advice: str,
            headers: dict[str, str] | None = None) -> Response:
    """A page that says what went wrong (`sentence`) and what to do (`advice`)."""
    return render("message.html", status, headers, title=title, sentence=sentence,
                  advice=advice)
