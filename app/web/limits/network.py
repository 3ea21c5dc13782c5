"""Whom a per-address limit counts: the client's network, and the pseudonym it is counted under
in a store outside the process."""
import hashlib
import ipaddress

from flask_limiter.util import get_remote_address

from app.runtime.secrets import instance_secret


def client_network() -> str:
    """Whom a per-IP limit counts: the client's IPv4 address, or the /64 network of its IPv6
    address. A subscriber or a host is given a whole /64 (RFC 6177), so counting each IPv6
    address apart would give one client 2**64 budgets. An IPv4 address seen through a
    dual-stack socket (::ffff:203.0.113.1) counts as that IPv4 address."""
    address = get_remote_address()
    if ":" not in address:
        return address
    try:
        ip = ipaddress.IPv6Address(address)
    except ValueError:  # not an address (a proxy's garbled X-Forwarded-For): counted as given
        return address
    if ip.ipv4_mapped:
        return str(ip.ipv4_mapped)
    return str(ipaddress.IPv6Network((ip, 64), strict=False))


def pseudonym(identity: str) -> str:
    """`identity` keyed-hashed (BLAKE2b) with the installation's secret, which lives in the
    database: a store that writes its keys to disk (a Redis snapshot) or whose keys anyone can
    list holds no client address, and every worker and host still counts a client under one
    name. An address cannot be found by hashing all 2**32 of them without the secret."""
    return hashlib.blake2b(identity.encode(), key=instance_secret("limits"),
                           digest_size=16).hexdigest()
