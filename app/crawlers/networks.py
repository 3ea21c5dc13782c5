"""Name the network an address belongs to, so the address itself never has to be stored."""

from __future__ import annotations

import ipaddress

IPV4_PREFIX = 24
IPV6_PREFIX = 48

# A convenience for reading crawl reports, not an authoritative or complete list: a few ranges
# the operators publish for their crawlers. Anything else is named by its /24 or /48.
_KNOWN_NETWORKS: tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str], ...] = tuple(
    (ipaddress.ip_network(cidr), name)
    for cidr, name in (
        ("66.249.64.0/19", "Google"),
        ("2001:4860:4801::/48", "Google"),
        ("40.77.167.0/24", "Microsoft"),
        ("157.55.39.0/24", "Microsoft"),
        ("207.46.13.0/24", "Microsoft"),
        ("17.0.0.0/8", "Apple"),
    )
)


def network_of(ip: str) -> str:
    """Return a known operator's name, else the address's /24 (IPv4) or /48 (IPv6) prefix.

    Raises ValueError for anything that is not an IP address string.
    """
    address = parse_ip(ip)
    for network, name in _KNOWN_NETWORKS:
        if address.version == network.version and address in network:
            return name
    # Built from the integer so an IPv6 zone id ("fe80::1%eth0") cannot leak into the name.
    if address.version == 4:
        return str(ipaddress.IPv4Network((int(address), IPV4_PREFIX), strict=False))
    return str(ipaddress.IPv6Network((int(address), IPV6_PREFIX), strict=False))


def parse_ip(ip: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The address, IPv4-mapped IPv6 as IPv4; ValueError (never echoing the input) otherwise."""
    if not isinstance(ip, str):
        raise ValueError("IP address must be a string")
    try:
        address = ipaddress.ip_address(ip.strip())
    except ValueError:
        raise ValueError("not a valid IP address") from None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


__all__ = ["IPV4_PREFIX", "IPV6_PREFIX", "network_of"]
