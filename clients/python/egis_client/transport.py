"""One HTTP exchange with egis, over the standard library's urllib.

urllib rather than an HTTP library: a backend installing this client gets no dependency to
reconcile with its own; one request a second or so needs no connection pool.
"""
from __future__ import annotations

import gzip
import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from http.client import HTTPException
from typing import Any

USER_AGENT = "egis-client-python/1.0.0"


class NetworkError(Exception):
    """No answer: refused, reset, timed out. Whether egis stored the request is unknown."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict[str, Any]  # the JSON object answered; empty for an empty or non-JSON body
    retry_after: float | None  # seconds, from a Retry-After header

    @property
    def retryable(self) -> bool:
        return self.status == 429 or self.status >= 500

    @property
    def sentence(self) -> str:
        """The service's own words for a refusal."""
        error = self.body.get("error")
        return error if isinstance(error, str) else f"HTTP {self.status} without an explanation"


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    # A redirect would turn the POST into a GET without its body: report it as it is instead.
    def redirect_request(self, *_args: Any, **_kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """A Retry-After value (seconds, or an HTTP date) as seconds from now."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max((moment - (now or datetime.now(UTC))).total_seconds(), 0.0)


def exchange(method: str, url: str, key: str, timeout: float, body: str | None = None,
             compress: bool = False, headers: dict[str, str] | None = None) -> Answer:
    """Send one request; the answer, whatever its status. NetworkError when there is none."""
    all_headers = {"Authorization": f"Bearer {key}", "User-Agent": USER_AGENT,
                   "Accept": "application/json", **(headers or {})}
    data = None
    if body is not None:
        data = body.encode()
        all_headers["Content-Type"] = "application/json"
        if compress:
            data = gzip.compress(data)
            all_headers["Content-Encoding"] = "gzip"
    request = urllib.request.Request(url, data=data, method=method, headers=all_headers)
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return _answer(response.status, response.read(), response.headers)
    except urllib.error.HTTPError as error:
        with error:
            return _answer(error.code, _read(error), error.headers)
    except (OSError, HTTPException) as error:  # URLError is an OSError
        raise NetworkError(f"{method} {url}: {error}") from error


def _read(error: urllib.error.HTTPError) -> bytes:
    try:
        return error.read()
    except (OSError, HTTPException):
        return b""


def _answer(status: int, raw: bytes, headers: Any) -> Answer:
    try:
        body = json.loads(raw) if raw else {}
    except ValueError:
        body = {}
    return Answer(status=status, body=body if isinstance(body, dict) else {},
                  retry_after=retry_after_seconds(headers.get("Retry-After")))
