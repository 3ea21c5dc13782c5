"""Client ID metadata documents: a `client_id` that is an https URL with a path names a JSON
document the client serves about itself, fetched here instead of a registration.

Fetched safely, since the URL comes from whoever calls /oauth/authorize: no redirects, at most
3 s in all (name resolution included) and 5 KiB, TLS verified against the system's CA store
(which SSL_CERT_FILE may name) and the certificates of REQUESTS_CA_BUNDLE, if set. A host
that resolves to any loopback, private, link-local or otherwise non-global address is refused
(server-side request forgery) unless EGIS_OAUTH_PRIVATE_CLIENT_URLS=1; the name is resolved
once, the socket connects to an address that passed the check, and the address it is connected
to is checked again, so a name that resolves differently a second time (DNS rebinding) cannot
redirect it.

Written on the standard library (socket, ssl, http.client) rather than requests or httpx: the
check must hold for the socket actually connected, and neither lets its caller choose the address
a connection uses without a transport of its own; http.client takes a connected socket as is.
The document must be a JSON object whose `client_id` is the URL, with the metadata that
registration takes (app.oauth.metadata); how long it is kept is its Cache-Control max-age, at most
24 hours (app.oauth.clients).
"""
import http.client
import ipaddress
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

from app.errors import ApiError
from app.oauth import metadata

TIMEOUT_SECONDS = 3.0
MAX_BYTES = 5 * 1024
MAX_CACHE_SECONDS = 24 * 3600
MAX_AGE = re.compile(r"max-age=([0-9]+)")


class DocumentError(Exception):
    """Why a metadata document cannot be used, as one sentence for the owner or the client."""


@dataclass(frozen=True)
class Document:
    metadata: dict[str, Any]  # as app.oauth.metadata keeps it
    cache_seconds: int


def is_document_url(client_id: str) -> bool:
    """Whether `client_id` names a metadata document: https, a host, a path other than /."""
    try:
        parts = urlsplit(client_id)
        parts.port  # noqa: B018 - raises for a port that is not a number
    except ValueError:
        return False
    return (parts.scheme == "https" and bool(parts.hostname) and parts.path not in ("", "/")
            and not parts.fragment and not parts.username and not parts.password)


def fetch(url: str, allow_private: bool) -> Document:
    """The document at `url`, checked; DocumentError when it cannot be used."""
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or 443
    deadline = time.monotonic() + TIMEOUT_SECONDS
    connection = http.client.HTTPSConnection(host, port)
    # Kept here too: http.client lets go of its socket once a response says it will close.
    tls = connection.sock = _tls(_connect(host, port, allow_private, deadline), host, deadline)
    try:
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        connection.request("GET", target, headers={"Accept": "application/json",
                                                    "User-Agent": "egis"})
        response = connection.getresponse()
        if response.status != 200:
            redirect = " (redirects are not followed)" if 300 <= response.status < 400 else ""
            raise DocumentError(f"it answered HTTP {response.status}{redirect}")
        body = _read(response, tls, deadline)
        cache_control = response.getheader("Cache-Control", "")
    except (OSError, http.client.HTTPException) as error:
        raise DocumentError(_network_failure(error)) from None
    finally:
        connection.close()
    return Document(_checked(body, url), _cache_seconds(cache_control))


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise DocumentError(f"it did not arrive within {TIMEOUT_SECONDS:g} s")
    return left


def _resolve(host: str, port: int, deadline: float) -> list[tuple[Any, ...]]:
    """getaddrinfo within the deadline (it has no timeout of its own)."""
    answer: dict[str, Any] = {}

    def run() -> None:
        try:
            answer["infos"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as error:
            answer["error"] = error

    resolver = threading.Thread(target=run, daemon=True)
    resolver.start()
    resolver.join(_remaining(deadline))
    if resolver.is_alive():
        raise DocumentError(f"its host name did not resolve within {TIMEOUT_SECONDS:g} s")
    if "error" in answer:
        raise DocumentError("its host name does not resolve")
    return answer["infos"]


def is_global(address: str) -> bool:
    """A public unicast address (an IPv4-mapped IPv6 address is judged as its IPv4 address)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


NOT_GLOBAL = ("its host resolves to a loopback, private, link-local or otherwise non-global "
              "address")


def _connect(host: str, port: int, allow_private: bool, deadline: float) -> socket.socket:
    infos = _resolve(host, port, deadline)
    if not allow_private and not all(is_global(info[4][0]) for info in infos):
        raise DocumentError(NOT_GLOBAL)
    failure: OSError | None = None
    for family, kind, protocol, _name, address in infos:
        sock = socket.socket(family, kind, protocol)
        try:
            sock.settimeout(_remaining(deadline))
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
    raise DocumentError(_network_failure(failure))


@lru_cache(maxsize=4)
def _context(_cert_file: str | None, bundle: str | None) -> ssl.SSLContext:
    """The system's CA store (OpenSSL reads SSL_CERT_FILE itself: it is in the cache's key),
    and the certificates of REQUESTS_CA_BUNDLE's file too, when it names one."""
    context = ssl.create_default_context()
    if bundle:
        context.load_verify_locations(cafile=bundle)
    return context


def _tls(sock: socket.socket, host: str, deadline: float) -> ssl.SSLSocket:
    try:
        sock.settimeout(_remaining(deadline))
        context = _context(os.environ.get("SSL_CERT_FILE"),
                           os.environ.get("REQUESTS_CA_BUNDLE") or None)
        return context.wrap_socket(sock, server_hostname=host)
    except ssl.SSLCertVerificationError:
        sock.close()
        raise DocumentError("its TLS certificate could not be verified") from None
    except (OSError, DocumentError) as error:
        sock.close()
        if isinstance(error, DocumentError):
            raise
        raise DocumentError(_network_failure(error)) from None


def _read(response: http.client.HTTPResponse, sock: socket.socket, deadline: float) -> bytes:
    body = b""
    while len(body) <= MAX_BYTES:
        sock.settimeout(_remaining(deadline))
        chunk = response.read1(MAX_BYTES + 1 - len(body))
        if not chunk:
            return body
        body += chunk
    raise DocumentError(f"it is larger than {MAX_BYTES} bytes")


def _network_failure(error: BaseException | None) -> str:
    if isinstance(error, (TimeoutError, socket.timeout)):
        return f"it did not arrive within {TIMEOUT_SECONDS:g} s"
    return "it could not be fetched (the connection failed)"


def _checked(body: bytes, url: str) -> dict[str, Any]:
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise DocumentError("it is not JSON") from None
    if not isinstance(document, dict) or document.get("client_id") != url:
        raise DocumentError("its client_id is not the URL it was fetched from")
    try:
        return metadata.load(document)
    except ApiError as refused:
        raise DocumentError(f"its metadata is not valid ({refused.extra['error_description']})"
                            ) from None


def _cache_seconds(cache_control: str) -> int:
    directives = cache_control.lower()
    if "no-store" in directives or "no-cache" in directives:
        return 0
    found = MAX_AGE.search(directives)
    return min(int(found.group(1)), MAX_CACHE_SECONDS) if found else MAX_CACHE_SECONDS
