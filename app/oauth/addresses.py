"""Which hosts a client metadata document may be fetched from: a host name that parses, and
addresses that are global.

A host is an IPv6 literal in brackets, or a DNS name (an internationalized one as its IDNA
ASCII form) of labels of 1-63 letters, digits, hyphens or underscores, at most 253 characters;
anything else (`a..b`, a label over 63 characters, a space, a zone id) does not parse. A name
that spells an IPv4 address the way the C library reads one (`127.1`, `2130706433`,
`0x7f000001`, `0177.0.0.1`: inet_aton) is that address, in its usual form: what the resolver
would have connected to, and one name for a host however it is spelled.

An address is global when Python's `is_global` says so and none of NOT_GLOBAL holds it, judged
as the IPv4 address it carries when it is an IPv6 form of one. The Python this runs on
(3.11.7) predates the fix of CVE-2024-4032: its `is_global` takes `::127.0.0.1` (IPv4-
compatible), `::ffff:0:7f00:1` (IPv4-translated), `64:ff9b::7f00:1` (NAT64), `2002:7f00:1::1`
(6to4), `fec0::1` (site-local) and `192.0.0.8` (IETF protocol assignments) for global; the
later fix still takes NAT64's well-known prefix for global, whatever IPv4 address it carries.
So the blocks of IANA's special-purpose registries that are not globally reachable are listed
here too, and the IPv4 address inside IPv4-mapped, IPv4-translated and NAT64 addresses is judged
as itself. 6to4 and Teredo are refused whole (a relay delivers to whatever IPv4 address they
carry, Teredo's obfuscated), like the deprecated IPv4-compatible addresses (all of ::/8).
"""
import ipaddress
import re
import socket

MAX_HOST = 253
LABEL = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")

# Not globally reachable, though Python 3.11.7 says so of some or all of each.
NOT_GLOBAL = tuple(ipaddress.ip_network(network) for network in (
    "192.0.0.0/24",  # IETF protocol assignments
    "::/8",  # reserved: unspecified, loopback, IPv4-compatible (mapped, translated: below)
    "64:ff9b:1::/48",  # NAT64 for local use (RFC 8215)
    "2001::/32",  # Teredo
    "2002::/16",  # 6to4
    "3fff::/20",  # documentation (RFC 9637)
    "5f00::/16",  # SRv6 segment identifiers (RFC 9602)
    "fec0::/10",  # site-local (deprecated, RFC 3879)
))
MAPPED = ipaddress.ip_network("::ffff:0:0/96")
TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")  # RFC 2765
NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052's well-known prefix
CARRYING_IPV4 = (MAPPED, TRANSLATED, NAT64)


class MalformedHostError(ValueError):
    """A host that is neither a DNS name nor an IPv6 literal."""


def parse_host(host: str, bracketed: bool = False) -> str:
    """`host` (as urlsplit's `hostname` gives it: lowercased, without the brackets that
    `bracketed` says it had) checked, in the ASCII form a connection uses; MalformedHostError
    when it does not parse."""
    if bracketed or ":" in host:
        try:
            if "%" in host:  # a zone id: an interface of egis's, never a client's host
                raise ValueError(host)
            return str(ipaddress.IPv6Address(host))
        except ValueError:
            raise MalformedHostError(host) from None
    try:
        name = host.encode("idna").decode("ascii") if not host.isascii() else host
    except UnicodeError:
        raise MalformedHostError(host) from None
    labels = name.removesuffix(".").split(".")
    if not name or len(name) > MAX_HOST or not all(LABEL.fullmatch(label) for label in labels):
        raise MalformedHostError(host)
    try:
        return socket.inet_ntoa(socket.inet_aton(name))
    except OSError:
        return name  # a DNS name


def is_global(address: str) -> bool:
    """Whether `address` (as getaddrinfo or getpeername gives it) is a public unicast address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        carried = next((network for network in CARRYING_IPV4 if ip in network), None)
        if carried is not None:
            return is_global(str(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)))
    if any(ip.version == network.version and ip in network for network in NOT_GLOBAL):
        return False
    return ip.is_global and not ip.is_multicast
