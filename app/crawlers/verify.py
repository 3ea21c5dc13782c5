"""Verify that an address claiming to be a crawler belongs to it: reverse DNS (PTR) must name
a host under one of the crawler's domains, and that host's A/AAAA records must include the
address (forward confirmation; anyone can set a PTR for their own address).

Nothing here logs: the address must never reach a log.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

import dns.exception
import dns.name
import dns.rdatatype
import dns.resolver
import dns.reversename

from app.crawlers.networks import parse_ip

_Result = bool | None
_MAX_CANDIDATES = 3


class CrawlerVerifier:
    """Reverse-DNS plus forward-confirmation checks, with a bounded, thread-safe TTL cache.

    verify() returns True (verified), False (the check ran and failed: no PTR, a host outside
    the domains, or a forward lookup that does not give the address back) or None (could not
    check: timeout, server failure; the caller must not accuse the client).
    """

    def __init__(
        self,
        nameservers: list[str] | None = None,
        port: int = 53,
        timeout: float = 1.0,
        cache_ttl: float = 3600,
        cache_size: int = 10000,
        failure_ttl: float = 60,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if nameservers:
            resolver = dns.resolver.Resolver(configure=False)
            resolver.nameservers = list(nameservers)
            resolver.port = port
        else:
            resolver = dns.resolver.Resolver()
        resolver.timeout = timeout
        resolver.lifetime = timeout
        self._resolver = resolver
        self._timeout = timeout
        # "Could not check" is cached briefly too, so a dead resolver does not cost every
        # request a full timeout.
        self._cache = _TTLCache(cache_size, clock)
        self._cache_ttl = cache_ttl
        self._failure_ttl = failure_ttl

    def verify(self, ip: str, domains: tuple[str, ...]) -> bool | None:
        """Check `ip` against the crawler's `domains`. Raises ValueError for an invalid IP."""
        address = parse_ip(ip)
        if isinstance(domains, str):
            domains = (domains,)
        suffixes = tuple(sorted({_normalize_domain(d) for d in domains} - {""}))
        if not suffixes:
            return None
        key = (str(address), suffixes)
        hit, result = self._cache.get(key)
        if hit:
            return result
        result = self._check(address, suffixes)
        self._cache.put(key, result, self._failure_ttl if result is None else self._cache_ttl)
        return result

    def clear_cache(self) -> None:
        self._cache.clear()

    def _check(
        self, address: ipaddress.IPv4Address | ipaddress.IPv6Address, suffixes: tuple[str, ...]
    ) -> bool | None:
        # One budget for the whole check: a PTR zone is the client's to write, and could list
        # many in-domain names that each need a forward lookup.
        deadline = time.monotonic() + 2 * self._timeout
        hosts = self._lookup(
            dns.reversename.from_address(str(address)), dns.rdatatype.PTR, deadline
        )
        if hosts is None:
            return None
        candidates = [h for h in hosts if _in_domains(h, suffixes)][:_MAX_CANDIDATES]
        if not candidates:
            return False
        rdtype = dns.rdatatype.A if address.version == 4 else dns.rdatatype.AAAA
        undecided = False
        for host in candidates:
            addresses = self._lookup(dns.name.from_text(host), rdtype, deadline)
            if addresses is None:
                undecided = True
            elif any(_same_address(a, address) for a in addresses):
                return True
        return None if undecided else False

    def _lookup(
        self, qname: dns.name.Name, rdtype: dns.rdatatype.RdataType, deadline: float
    ) -> list[str] | None:
        """Record values as text; [] when the name or record does not exist; None on failure."""
        lifetime = min(self._timeout, deadline - time.monotonic())
        if lifetime <= 0:
            return None
        try:
            answer = self._resolver.resolve(qname, rdtype, lifetime=lifetime, search=False)
        except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
            return []
        except dns.exception.DNSException:
            return None
        return [rdata.to_text() for rdata in answer]


def verifier_from_setting(value: str, timeout: float) -> CrawlerVerifier:
    """Build a verifier from a setting: "" (system resolver), "127.0.0.1", "127.0.0.1:5353",
    "[::1]:5353", or several comma-separated servers sharing one port."""
    entries = [e.strip() for e in (value or "").split(",") if e.strip()]
    if not entries:
        return CrawlerVerifier(timeout=timeout)
    servers = [_parse_server(e) for e in entries]
    ports = {port for _, port in servers}
    if len(ports) > 1:
        raise ValueError("all DNS servers must use the same port")
    return CrawlerVerifier(
        nameservers=[host for host, _ in servers], port=ports.pop(), timeout=timeout
    )


def _parse_server(entry: str) -> tuple[str, int]:
    host, port = entry, "53"
    if entry.startswith("["):
        host, sep, rest = entry[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(f"invalid DNS server setting: {entry!r}")
        port = rest[1:] or "53"
    elif entry.count(":") == 1:
        host, port = entry.split(":")
    try:
        ipaddress.ip_address(host)
        port_number = int(port)
    except ValueError:
        raise ValueError(f"invalid DNS server setting: {entry!r}") from None
    if not 0 < port_number < 65536:
        raise ValueError(f"invalid DNS server port: {entry!r}")
    return host, port_number



def _normalize_domain(domain: str) -> str:
    return domain.strip().rstrip(".").lower()


def _in_domains(host: str, suffixes: tuple[str, ...]) -> bool:
    host = _normalize_domain(host)
    return any(host == s or host.endswith("." + s) for s in suffixes)


def _same_address(text: str, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    try:
        return ipaddress.ip_address(text) == address
    except ValueError:
        return False


class _TTLCache:
    """LRU-bounded mapping whose entries expire; safe to share between threads."""

    def __init__(self, size: int, clock: Callable[[], float]) -> None:
        self._size = max(1, size)
        self._clock = clock
        self._entries: OrderedDict[object, tuple[float, _Result]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: object) -> tuple[bool, _Result]:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return False, None
            expires, value = entry
            if expires <= self._clock():
                del self._entries[key]
                return False, None
            self._entries.move_to_end(key)
            return True, value

    def put(self, key: object, value: _Result, ttl: float) -> None:
        if ttl <= 0:
            return
        with self._lock:
            self._entries[key] = (self._clock() + ttl, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


__all__ = ["CrawlerVerifier", "verifier_from_setting"]
