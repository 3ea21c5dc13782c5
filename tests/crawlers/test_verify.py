import threading
from collections.abc import Iterator

import pytest

from app.crawlers.verify import CrawlerVerifier, verifier_from_setting
from tests.fixtures.dns_server import DNSServer

GOOGLE = ("googlebot.com", "google.com")
GOOGLEBOT_IP = "66.249.66.1"
GOOGLEBOT_HOST = "crawl-66-249-66-1.googlebot.com"
GOOGLEBOT_IPV6 = "2001:4860:4801:10::1"
GOOGLEBOT_HOST6 = "crawl-2001-4860-4801-10--1.googlebot.com"


@pytest.fixture
def dns_server() -> Iterator[DNSServer]:
    server = DNSServer()
    server.add_ptr(GOOGLEBOT_IP, GOOGLEBOT_HOST)
    server.add_address(GOOGLEBOT_HOST, GOOGLEBOT_IP)
    server.add_ptr(GOOGLEBOT_IPV6, GOOGLEBOT_HOST6)
    server.add_address(GOOGLEBOT_HOST6, GOOGLEBOT_IPV6)
    with server:
        yield server


def make_verifier(server: DNSServer, **kwargs) -> CrawlerVerifier:
    kwargs.setdefault("timeout", 0.5)
    return CrawlerVerifier(nameservers=[server.host], port=server.port, **kwargs)


def test_verified_googlebot(dns_server: DNSServer) -> None:
    assert make_verifier(dns_server).verify(GOOGLEBOT_IP, GOOGLE) is True
    assert dns_server.queries == [
        ("1.66.249.66.in-addr.arpa.", "PTR"),
        (GOOGLEBOT_HOST + ".", "A"),
    ]


def test_verified_ipv6(dns_server: DNSServer) -> None:
    assert make_verifier(dns_server).verify(GOOGLEBOT_IPV6, GOOGLE) is True
    assert dns_server.queries[-1] == (GOOGLEBOT_HOST6 + ".", "AAAA")


def test_ipv4_mapped_address_is_checked_as_ipv4(dns_server: DNSServer) -> None:
    assert make_verifier(dns_server).verify("::ffff:" + GOOGLEBOT_IP, GOOGLE) is True


def test_domain_matching_ignores_case_and_trailing_dot(dns_server: DNSServer) -> None:
    assert make_verifier(dns_server).verify(GOOGLEBOT_IP, ("GoogleBot.com.",)) is True


def test_ptr_outside_the_domains_is_spoofed(dns_server: DNSServer) -> None:
    dns_server.add_ptr("203.0.113.5", "crawler.evil.example")
    dns_server.add_address("crawler.evil.example", "203.0.113.5")
    assert make_verifier(dns_server).verify("203.0.113.5", GOOGLE) is False
    assert len(dns_server.queries) == 1  # no forward lookup for a foreign host


def test_suffix_must_be_a_whole_label(dns_server: DNSServer) -> None:
    dns_server.add_ptr("203.0.113.6", "crawl.evilgooglebot.com")
    dns_server.add_address("crawl.evilgooglebot.com", "203.0.113.6")
    assert make_verifier(dns_server).verify("203.0.113.6", GOOGLE) is False


def test_forward_mismatch_is_spoofed(dns_server: DNSServer) -> None:
    # Anyone can write a googlebot.com PTR for their own address; the forward lookup is
    # Google's and points elsewhere.
    dns_server.add_ptr("203.0.113.7", "crawl-66-249-66-2.googlebot.com")
    dns_server.add_address("crawl-66-249-66-2.googlebot.com", "66.249.66.2")
    assert make_verifier(dns_server).verify("203.0.113.7", GOOGLE) is False


def test_forward_nxdomain_is_spoofed(dns_server: DNSServer) -> None:
    dns_server.add_ptr("203.0.113.8", "no-such-host.googlebot.com")
    assert make_verifier(dns_server).verify("203.0.113.8", GOOGLE) is False


def test_one_matching_ptr_among_several_is_enough(dns_server: DNSServer) -> None:
    dns_server.add_ptr("66.249.66.9", "alias.example.net")
    dns_server.add_ptr("66.249.66.9", "crawl-66-249-66-9.googlebot.com")
    dns_server.add_address("crawl-66-249-66-9.googlebot.com", "66.249.66.9")
    assert make_verifier(dns_server).verify("66.249.66.9", GOOGLE) is True


def test_ptr_nxdomain_is_spoofed(dns_server: DNSServer) -> None:
    assert make_verifier(dns_server).verify("198.51.100.1", GOOGLE) is False


def test_timeout_is_undecided(dns_server: DNSServer) -> None:
    dns_server.silent = True
    assert make_verifier(dns_server, timeout=0.2).verify(GOOGLEBOT_IP, GOOGLE) is None
    assert dns_server.query_count >= 1


def test_servfail_is_undecided(dns_server: DNSServer) -> None:
    dns_server.servfail.add("1.66.249.66.in-addr.arpa.")
    assert make_verifier(dns_server).verify(GOOGLEBOT_IP, GOOGLE) is None


def test_forward_failure_is_undecided(dns_server: DNSServer) -> None:
    dns_server.servfail.add(GOOGLEBOT_HOST + ".")
    assert make_verifier(dns_server).verify(GOOGLEBOT_IP, GOOGLE) is None


def test_results_are_cached(dns_server: DNSServer) -> None:
    verifier = make_verifier(dns_server)
    assert verifier.verify(GOOGLEBOT_IP, GOOGLE) is True
    queries = dns_server.query_count
    assert verifier.verify(GOOGLEBOT_IP, GOOGLE) is True
    assert verifier.verify(GOOGLEBOT_IP, tuple(reversed(GOOGLE))) is True
    assert dns_server.query_count == queries


def test_negative_results_are_cached(dns_server: DNSServer) -> None:
    verifier = make_verifier(dns_server)
    assert verifier.verify("198.51.100.1", GOOGLE) is False
    queries = dns_server.query_count
    assert verifier.verify("198.51.100.1", GOOGLE) is False
    assert dns_server.query_count == queries


def test_cache_is_per_domains(dns_server: DNSServer) -> None:
    verifier = make_verifier(dns_server)
    assert verifier.verify(GOOGLEBOT_IP, GOOGLE) is True
    assert verifier.verify(GOOGLEBOT_IP, ("search.msn.com",)) is False


def test_cache_entries_expire() -> None:
    now = [0.0]
    with DNSServer() as server:
        server.add_ptr(GOOGLEBOT_IP, GOOGLEBOT_HOST)
        server.add_address(GOOGLEBOT_HOST, GOOGLEBOT_IP)
        verifier = make_verifier(server, cache_ttl=100, clock=lambda: now[0])
        assert verifier.verify(GOOGLEBOT_IP, GOOGLE) is True
        now[0] = 99
        assert verifier.verify(GOOGLEBOT_IP, GOOGLE) is True
        assert server.query_count == 2
        now[0] = 101
        assert verifier.verify(GOOGLEBOT_IP, GOOGLE) is True
        assert server.query_count == 4


def test_undecided_results_are_cached_briefly(dns_server: DNSServer) -> None:
    now = [0.0]
    dns_server.servfail.add("1.66.249.66.in-addr.arpa.")
    verifier = make_verifier(dns_server, failure_ttl=10, clock=lambda: now[0])
    assert verifier.verify(GOOGLEBOT_IP, GOOGLE) is None
    assert verifier.verify(GOOGLEBOT_IP, GOOGLE) is None
    assert dns_server.query_count == 1
    dns_server.servfail.clear()
    now[0] = 11
    assert verifier.verify(GOOGLEBOT_IP, GOOGLE) is True


def test_cache_is_bounded(dns_server: DNSServer) -> None:
    verifier = make_verifier(dns_server, cache_size=2)
    verifier.verify("198.51.100.1", GOOGLE)
    verifier.verify("198.51.100.2", GOOGLE)
    verifier.verify("198.51.100.3", GOOGLE)
    queries = dns_server.query_count
    verifier.verify("198.51.100.3", GOOGLE)
    assert dns_server.query_count == queries
    verifier.verify("198.51.100.1", GOOGLE)
    assert dns_server.query_count == queries + 1


def test_concurrent_verifications(dns_server: DNSServer) -> None:
    verifier = make_verifier(dns_server)
    results: list[bool | None] = []
    threads = [
        threading.Thread(target=lambda: results.append(verifier.verify(GOOGLEBOT_IP, GOOGLE)))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [True] * 8


def test_no_domains_means_no_check(dns_server: DNSServer) -> None:
    assert make_verifier(dns_server).verify(GOOGLEBOT_IP, ()) is None
    assert dns_server.query_count == 0


@pytest.mark.parametrize("ip", ["", "not-an-ip", "66.249.66", None])
def test_invalid_ip_raises_value_error(dns_server: DNSServer, ip) -> None:
    with pytest.raises(ValueError):
        make_verifier(dns_server).verify(ip, GOOGLE)


def test_verifier_from_setting_with_port(dns_server: DNSServer) -> None:
    verifier = verifier_from_setting(f"127.0.0.1:{dns_server.port}", timeout=0.5)
    assert verifier.verify(GOOGLEBOT_IP, GOOGLE) is True


def test_verifier_from_setting_default_port() -> None:
    resolver = verifier_from_setting(" 127.0.0.1 ", timeout=0.3)._resolver
    assert resolver.nameservers == ["127.0.0.1"]
    assert resolver.port == 53
    assert resolver.lifetime == 0.3


def test_verifier_from_setting_ipv6_and_lists() -> None:
    resolver = verifier_from_setting("[::1]:5353", timeout=1)._resolver
    assert (resolver.nameservers, resolver.port) == (["::1"], 5353)
    resolver = verifier_from_setting("127.0.0.1:5353, 127.0.0.2:5353", timeout=1)._resolver
    assert (resolver.nameservers, resolver.port) == (["127.0.0.1", "127.0.0.2"], 5353)


def test_verifier_from_empty_setting_uses_system_resolver() -> None:
    assert isinstance(verifier_from_setting("", timeout=1), CrawlerVerifier)


@pytest.mark.parametrize(
    "value",
    ["dns.example", "127.0.0.1:port", "127.0.0.1:0", "[::1", "127.0.0.1:53,127.0.0.2:5353"],
)
def test_verifier_from_setting_rejects_bad_values(value: str) -> None:
    with pytest.raises(ValueError):
        verifier_from_setting(value, timeout=1)
