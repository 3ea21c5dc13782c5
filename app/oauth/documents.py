"""Client ID metadata documents: a `client_id` that is an https URL with a path names a JSON
document the client serves about itself, fetched here instead of a registration.

Fetched safely, since the URL comes from whoever calls /oauth/authorize or /oauth/token:
- One deadline, DEADLINE_SECONDS in all: name resolution (in a thread: getaddrinfo has no
  timeout), connection, TLS handshake, response headers and body together. A watchdog shuts the
  socket down when it comes, whatever the fetch is waiting for: a per-read timeout let a server
  sending its headers a byte a second hold a worker thread as long as it kept sending.
- At most two fetches at once per worker, and what failed is not tried again for a minute
  (app.oauth.fetches): a request that would exceed either is answered at once.
- The host must parse, and every address it resolves to must be global (app.oauth.addresses)
  unless EGIS_OAUTH_PRIVATE_CLIENT_URLS=1: server-side request forgery. The name is resolved
  once, the socket connects to an address that passed the check, and the address it is
  connected to is checked again, so a name that resolves differently a second time (DNS
  rebinding) cannot redirect it.
- No redirects, at most 5 KiB, TLS verified against the system's CA store (which SSL_CERT_FILE
  may name) and the certificates of REQUESTS_CA_BUNDLE, if set.
- Whatever the reason a document cannot be used, the client and the owner are told one
  sentence (REFUSAL): the fetch must not tell a name that does not resolve from an address
  refused, a port closed or a timeout (a network probe). The reason is logged for the operator.

Written on the standard library (socket, ssl, http.client) rather than requests or httpx: the
check must hold for the socket actually connected, and neither lets its caller choose the address
a connection uses without a transport of its own; http.client takes a connected socket as is.
The document must be a JSON object whose `client_id` is the URL, with the metadata that
registration takes (app.oauth.metadata); how long it is kept is its Cache-Control max-age, at most
24 hours (app.oauth.clients).
"""
import contextlib
import http.client
import logging
import os
import re
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import orjson

from app.oauth import fetches, metadata
from app.oauth.addresses import MalformedHostError, is_global, parse_host
from app.web.errors import ApiError

log = logging.getLogger(__name__)

DEADLINE_SECONDS = 3.0
MAX_BYTES = 5 * 1024
MAX_URL = 2000  # a longer client_id URL does not parse: each worker may remember one a minute
MAX_CACHE_SECONDS = 24 * 3600
MAX_AGE = re.compile(r"max-age=([0-9]+)")
REFUSAL = ("The client URL (client_id) cannot be used: no valid client metadata document could "
           "be fetched from it.")
MALFORMED = ("The client_id is not a valid client metadata document URL: https, a host name "
             "and port that parse, a path, no fragment.")
BUSY = ("egis is fetching the client metadata documents of other apps right now: try again in "
        "a moment.")
BUSY_RETRY_SECONDS = 2
NOT_GLOBAL = "its host resolves to a loopback, private, link-local or otherwise non-global address"


class DocumentError(Exception):
    """Why a metadata document cannot be used (`reason`, for the log); the client and the owner
    are told REFUSAL only. `on_the_way`: the fetch failed before the host answered (its host is
    remembered, app.oauth.fetches), not in what it answered (the URL is)."""

    def __init__(self, reason: str, on_the_way: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.on_the_way = on_the_way


class MalformedURLError(ValueError):
    """A document URL whose host or port does not parse."""


@dataclass(frozen=True)
class Document:
    metadata: dict[str, Any]  # as app.oauth.metadata keeps it
    cache_seconds: int


def is_document_url(client_id: str) -> bool:
    """Whether `client_id` claims to name a metadata document: an https URL (one that does not
    parse included: `location` says so)."""
    return client_id[:8].lower() == "https://"


@dataclass(frozen=True)
class Location:
    url: str
    host: str  # as connected to: a DNS name in ASCII, or an IPv6 address
    port: int
    target: str  # the path and query asked for


def location(url: str) -> Location:
    """Where the document of `url` is; MalformedURLError when its host or port does not parse, or it
    has no path, a fragment or user information, or is longer than MAX_URL."""
    if len(url) > MAX_URL:
        raise MalformedURLError(url[:100])
    try:
        parts = urlsplit(url)
        port = parts.port or 443
        host = parse_host(parts.hostname or "", parts.netloc.rpartition("@")[2].startswith("["))
    except (ValueError, MalformedHostError):
        raise MalformedURLError(url) from None
    if (parts.scheme != "https" or parts.path in ("", "/") or parts.fragment
            or parts.username is not None or parts.password is not None):
        raise MalformedURLError(url)
    return Location(url, host, port, parts.path + (f"?{parts.query}" if parts.query else ""))


def fetch(url: str, allow_private: bool) -> Document:
    """The document at `url`, checked. MalformedURLError; fetches.BusyError; or DocumentError
    (REFUSAL) when it cannot be used."""
    where = location(url)
    if fetches.failed_hosts.holds(where.host) or fetches.failed_urls.holds(url):
        raise DocumentError("it failed less than a minute ago (not fetched again)")
    try:
        with fetches.slot():
            return _fetched(where, allow_private)
    except DocumentError as error:
        (fetches.failed_hosts if error.on_the_way else fetches.failed_urls).remember(
            where.host if error.on_the_way else url)
        log.info("client metadata document https://%s:%d%s cannot be used: %s", where.host,
                 where.port, urlsplit(url).path, error.reason)
        raise


def _fetched(where: Location, allow_private: bool) -> Document:
    watchdog = Watchdog(time.monotonic() + DEADLINE_SECONDS)
    try:
        tls = _tls(_connect(where, allow_private, watchdog), where.host)
        # Kept here too: http.client lets go of its socket once a response says it will close.
        connection = http.client.HTTPSConnection(where.host, where.port)
        connection.sock = tls
        try:
            connection.request("GET", where.target, headers={"Accept": "application/json",
                                                             "User-Agent": "egis"})
            response = connection.getresponse()
            if response.status != 200:
                redirect = " (redirects are not followed)" if 300 <= response.status < 400 else ""
                raise DocumentError(f"it answered HTTP {response.status}{redirect}", False)
            body = _read(response)
            cache_control = response.getheader("Cache-Control", "")
            watchdog.remaining()  # a body cut short by the watchdog reads as its end
        finally:
            connection.close()
            tls.close()
    except DocumentError:
        raise
    except (OSError, http.client.HTTPException, ValueError) as error:
        raise DocumentError(watchdog.failure(error)) from None
    finally:
        watchdog.stop()
    return Document(_checked(_parsed(body, where.url), where.url), _cache_seconds(cache_control))


class Watchdog:
    """Shuts a fetch's socket down at the deadline, whatever it waits for (connecting, the TLS
    handshake, a header, the body): the blocked call then fails at once."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.fired = False
        self._watched: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._cut)
        self._timer.daemon = True
        self._timer.start()

    def remaining(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0 or self.fired:
            raise DocumentError(f"it did not arrive within {DEADLINE_SECONDS:g} s")
        return left

    def watch(self, sock: socket.socket) -> None:
        """Watch `sock` (through a duplicate of its descriptor: shutting that down ends the
        connection of both, whichever object wraps it by then, ssl's included)."""
        with self._lock:
            if self._watched is not None:
                self._watched.close()
            self._watched = sock.dup()
            if self.fired:
                self._shut()

    def _cut(self) -> None:
        with self._lock:
            self.fired = True
            self._shut()

    def _shut(self) -> None:
        if self._watched is not None:
            with contextlib.suppress(OSError):  # not connected yet, or gone already
                self._watched.shutdown(socket.SHUT_RDWR)

    def failure(self, error: BaseException) -> str:
        if self.fired or isinstance(error, TimeoutError):
            return f"it did not arrive within {DEADLINE_SECONDS:g} s"
        if isinstance(error, ssl.SSLCertVerificationError):
            return "its TLS certificate could not be verified"
        return f"it could not be fetched ({type(error).__name__})"

    def stop(self) -> None:
        self._timer.cancel()
        with self._lock:
            if self._watched is not None:
                self._watched.close()
                self._watched = None


def _resolve(where: Location, watchdog: Watchdog) -> list[tuple[Any, ...]]:
    """getaddrinfo within the deadline (it has no timeout of its own)."""
    answer: dict[str, Any] = {}

    def run() -> None:
        try:
            answer["infos"] = socket.getaddrinfo(where.host, where.port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as error:
            answer["error"] = error

    resolver = threading.Thread(target=run, daemon=True)
    resolver.start()
    resolver.join(watchdog.remaining())
    if resolver.is_alive():
        raise DocumentError(f"its host name did not resolve within {DEADLINE_SECONDS:g} s")
    if "error" in answer:
        raise DocumentError("its host name does not resolve")
    return answer["infos"]


def _connect(where: Location, allow_private: bool, watchdog: Watchdog) -> socket.socket:
    infos = _resolve(where, watchdog)
    if not allow_private and not all(is_global(info[4][0]) for info in infos):
        raise DocumentError(NOT_GLOBAL)
    failure: OSError | None = None
    for family, kind, protocol, _name, address in infos:
        sock = socket.socket(family, kind, protocol)
        try:
            watchdog.watch(sock)
            sock.settimeout(watchdog.remaining())  # a backstop: the watchdog is the deadline
            sock.connect(address)
        except OSError as error:
            sock.close()
            failure = error
            continue
        except DocumentError:
            sock.close()
            raise
        if not allow_private and not is_global(sock.getpeername()[0]):
            sock.close()
            raise DocumentError(NOT_GLOBAL)
        return sock
    raise DocumentError(watchdog.failure(failure or OSError()))


@lru_cache(maxsize=4)
def _context(_cert_file: str | None, bundle: str | None) -> ssl.SSLContext:
    """The system's CA store (OpenSSL reads SSL_CERT_FILE itself: it is in the cache's key),
    and the certificates of REQUESTS_CA_BUNDLE's file too, when it names one."""
    context = ssl.create_default_context()
    if bundle:
        context.load_verify_locations(cafile=bundle)
    return context


def _tls(sock: socket.socket, host: str) -> ssl.SSLSocket:
    try:
        context = _context(os.environ.get("SSL_CERT_FILE"),
                           os.environ.get("REQUESTS_CA_BUNDLE") or None)
        return context.wrap_socket(sock, server_hostname=host)
    except BaseException:
        sock.close()
        raise


def _read(response: http.client.HTTPResponse) -> bytes:
    body = b""
    while len(body) <= MAX_BYTES:
        chunk = response.read1(MAX_BYTES + 1 - len(body))
        if not chunk:
            return body
        body += chunk
    raise DocumentError(f"it is larger than {MAX_BYTES} bytes", False)


def _parsed(body: bytes, url: str) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        raise DocumentError("it is not JSON", False) from None


def _checked(document: Any, url: str) -> dict[str, Any]:
    if not isinstance(document, dict) or document.get("client_id") != url:
        raise DocumentError("its client_id is not the URL it was fetched from", False)
    try:
        return metadata.load(document)
    except ApiError as refused:
        raise DocumentError(f"its metadata is not valid ({refused.extra['error_description']})",
                            False) from None


def _cache_seconds(cache_control: str) -> int:
    directives = cache_control.lower()
    if "no-store" in directives or "no-cache" in directives:
        return 0
    found = MAX_AGE.search(directives)
    return min(int(found.group(1)), MAX_CACHE_SECONDS) if found else MAX_CACHE_SECONDS
