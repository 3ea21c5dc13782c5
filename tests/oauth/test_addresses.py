"""Which hosts a client metadata document may come from (app/oauth/addresses.py): the host names
that parse, and the addresses that are global, every IPv6 spelling of a non-global IPv4 address
included (the Python here predates the fix of CVE-2024-4032). Through real fetches (refused
before connecting): tests/oauth/test_documents.py."""
import pytest

from app.oauth.addresses import MalformedHostError, is_global, parse_host


@pytest.mark.parametrize(("host", "parsed"), [
    ("client.example", "client.example"), ("a.b-c.example.", "a.b-c.example."),
    ("_acme.example", "_acme.example"), ("x" * 63 + ".example", "x" * 63 + ".example"),
    # What the C library reads as an IPv4 address is that address.
    ("127.0.0.1", "127.0.0.1"), ("127.1", "127.0.0.1"), ("2130706433", "127.0.0.1"),
    ("0x7f000001", "127.0.0.1"), ("0177.0.0.1", "127.0.0.1"), ("1.2.3.04", "1.2.3.4"),
    ("bücher.example", "xn--bcher-kva.example"), ("::1", "::1"),
    ("0:0:0:0:0:ffff:7f00:1", "::ffff:7f00:1")])
def test_host_names_that_parse(host, parsed):
    assert parse_host(host) == parsed


@pytest.mark.parametrize("host", [
    "a..b", ".example", "x" * 64 + ".example", "a b", "exa mple.example", "-a.example",
    "a-.example", "a/b", "a%2eb", "", ".", ("a." * 127) + "a", "fe80::1%25lo", "fe80::1%lo",
    "::1::2", "x" * 64, "a\x00b", "\u202eexample"])
def test_host_names_that_do_not_parse(host):
    assert parse_host("client.example") == "client.example"
    with pytest.raises(MalformedHostError):
        parse_host(host)


def test_a_bracketed_host_is_an_ipv6_address():
    assert parse_host("::1", bracketed=True) == "::1"
    for host in ("v1.x", "client.example", "127.0.0.1"):  # [v1.x] is not the name v1.x
        assert parse_host(host) == host
        with pytest.raises(MalformedHostError):
            parse_host(host, bracketed=True)


@pytest.mark.parametrize("address", [
    "93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", "1.1.1.1",
    # IPv6 forms of a global IPv4 address are judged as it is.
    "::ffff:93.184.215.14", "::ffff:0:5db8:d70e", "64:ff9b::5db8:d70e"])
def test_global_addresses(address):
    assert is_global(address)


@pytest.mark.parametrize("address", [
    "127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
    "0.0.0.0", "192.0.0.8", "192.0.2.1", "198.18.0.1", "224.0.0.1", "240.0.0.1",
    "255.255.255.255", "::", "::1", "fe80::1", "fe80::1%eth0", "fd00::1", "ff02::1",
    "2001:db8::1",
    # What Python 3.11.7's is_global takes for global (CVE-2024-4032): IPv4-compatible,
    # IPv4-translated, NAT64 and 6to4 spellings of 127.0.0.1 and of a private address;
    # site-local; NAT64 for local use; documentation; SRv6.
    "::127.0.0.1", "::7f00:1", "::10.0.0.1", "::ffff:0:7f00:1", "::ffff:0:a00:1",
    "64:ff9b::7f00:1", "64:ff9b::a00:1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::1",
    "2002:5db8:d70e::1", "fec0::1", "feff::1", "64:ff9b:1::5db8:d70e", "3fff::1", "5f00::1",
    # IPv4-mapped (Python judged these right already), Teredo.
    "::ffff:127.0.0.1", "::ffff:10.0.0.1", "2001:0:4136:e378:8000:63bf:3fff:fdd2"])
def test_non_global_addresses(address):
    assert is_global("93.184.215.14")
    assert not is_global(address)
