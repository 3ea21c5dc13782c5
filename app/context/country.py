"""The visitor's country (ISO 3166-1 alpha-2) from the client address, which is then dropped.

By default the lookup is iptocc: the regional Internet registries' delegation files, bundled in
the package (nothing is downloaded at run time; ~0.1 µs a lookup, under 1 MiB). Registry data
says where an address block was *registered*, not where its user is: good for most home and
mobile networks, wrong for many VPNs, clouds, corporate networks and multinational carriers
(README, "What is collected"). An operator who wants better can set `EGIS_GEOIP_DB` to a
MaxMind-format file (DB-IP's IP-to-Country Lite, MaxMind's GeoLite2-Country or their commercial
versions), read with maxminddb (`country.iso_code` of the record).

Private, loopback, link-local, shared (CGNAT), multicast, reserved and unspecified addresses
have no country (null); an IPv4-mapped IPv6 address is looked up as its IPv4 address; an IPv6
zone id (`fe80::1%eth0`) or text that is no address gives null, never an error.
"""
import ipaddress
from collections.abc import Callable
from typing import Any

import iptocc
import maxminddb
from maxminddb.errors import InvalidDatabaseError

Lookup = Callable[[str], str | None]


def registry_lookup(address: str) -> str | None:
    """iptocc's country for a global address (registry data)."""
    return iptocc.country_code(address)


class MaxMindLookup:
    """An operator's MaxMind-format country database (`EGIS_GEOIP_DB`), memory-mapped."""

    def __init__(self, path: str) -> None:
        self.reader = maxminddb.open_database(path, maxminddb.MODE_MMAP)

    def __call__(self, address: str) -> str | None:
        try:
            record: Any = self.reader.get(address)
        except (ValueError, InvalidDatabaseError):
            return None
        country = record.get("country") if isinstance(record, dict) else None
        return country.get("iso_code") if isinstance(country, dict) else None


def lookup_for(geoip_db: str | None) -> Lookup:
    """The lookup an app uses: the operator's file when `geoip_db` names one, else iptocc.
    A file that cannot be opened fails here, when the app is built, not on a request."""
    return MaxMindLookup(geoip_db) if geoip_db else registry_lookup


def country(address: str | None, lookup: Lookup) -> str | None:
    """The country code of `address` (the client address), upper case, or None."""
    if not address or "%" in address:  # a zone id: link-local at best
        return None
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return None
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if not ip.is_global:
        return None
    code = lookup(str(ip))
    if isinstance(code, str) and len(code) == 2 and code.isascii() and code.isalpha():
        return code.upper()
    return None
