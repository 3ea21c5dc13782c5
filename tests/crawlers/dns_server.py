"""A tiny DNS server for tests: answers from a dict on 127.0.0.1, counts queries.

    with DNSServer() as server:
        server.add_ptr("66.249.66.1", "crawl-66-249-66-1.googlebot.com")
        server.add_address("crawl-66-249-66-1.googlebot.com", "66.249.66.1")
        resolver.nameservers, resolver.port = [server.host], server.port

A name with no records answers NXDOMAIN; a name that has records of another type answers
NOERROR with no answer. `silent = True` drops every query (the client times out); names in
`servfail` answer SERVFAIL.
"""

from __future__ import annotations

import ipaddress
import socket
import threading

import dns.exception
import dns.flags
import dns.message
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.reversename
import dns.rrset


class DNSServer:
    def __init__(self, host: str = "127.0.0.1", ttl: int = 300) -> None:
        self.host = host
        self.ttl = ttl
        # (absolute lower-case name, type name) -> record values as zone-file text
        self.records: dict[tuple[str, str], list[str]] = {}
        self.servfail: set[str] = set()
        self.silent = False
        self.queries: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._sock is None:
            raise RuntimeError("server not started")
        return self._sock.getsockname()[1]

    @property
    def query_count(self) -> int:
        with self._lock:
            return len(self.queries)

    def add(self, name: str, rdtype: str, *values: str) -> None:
        self.records.setdefault((_absolute(name), rdtype.upper()), []).extend(values)

    def add_ptr(self, ip: str, hostname: str) -> None:
        self.add(dns.reversename.from_address(ip).to_text(), "PTR", _absolute(hostname))

    def add_address(self, hostname: str, ip: str) -> None:
        rdtype = "A" if ipaddress.ip_address(ip).version == 4 else "AAAA"
        self.add(hostname, rdtype, ip)

    def start(self) -> DNSServer:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        self._sock = socket.socket(family, socket.SOCK_DGRAM)
        self._sock.bind((self.host, 0))
        self._sock.settimeout(0.05)
        self._stop.clear()
        self._thread = threading.Thread(target=self._serve, name="test-dns", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self._sock is not None:
            self._sock.close()
        self._thread = None

    def __enter__(self) -> DNSServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _serve(self) -> None:
        assert self._sock is not None
        while not self._stop.is_set():
            try:
                data, peer = self._sock.recvfrom(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            response = self._answer(data)
            if response is not None:
                self._sock.sendto(response, peer)

    def _answer(self, data: bytes) -> bytes | None:
        try:
            query = dns.message.from_wire(data)
        except dns.exception.DNSException:
            return None
        if not query.question:
            return None
        question = query.question[0]
        name = question.name.to_text().lower()
        rdtype = dns.rdatatype.to_text(question.rdtype)
        with self._lock:
            self.queries.append((name, rdtype))
        if self.silent:
            return None
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA
        if name in self.servfail:
            response.set_rcode(dns.rcode.SERVFAIL)
        elif (name, rdtype) in self.records:
            response.answer.append(
                dns.rrset.from_text_list(
                    name, self.ttl, dns.rdataclass.IN, rdtype, self.records[(name, rdtype)]
                )
            )
        elif not any(known == name for known, _ in self.records):
            response.set_rcode(dns.rcode.NXDOMAIN)
        return response.to_wire()


def _absolute(name: str) -> str:
    name = name.lower()
    return name if name.endswith(".") else name + "."
