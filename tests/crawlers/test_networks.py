import pytest

from app.crawlers.networks import network_of


@pytest.mark.parametrize(
    ("ip", "network"),
    [
        ("203.0.113.7", "203.0.113.0/24"),
        ("203.0.113.255", "203.0.113.0/24"),
        ("10.1.2.3", "10.1.2.0/24"),
        ("2001:db8:1:2::5", "2001:db8:1::/48"),
        ("2001:DB8:1:ffff:ffff:ffff:ffff:ffff", "2001:db8:1::/48"),
        ("::1", "::/48"),
        ("fe80::1%eth0", "fe80::/48"),
        (" 203.0.113.7 ", "203.0.113.0/24"),
    ],
)
def test_prefix_of_unknown_addresses(ip: str, network: str) -> None:
    assert network_of(ip) == network


@pytest.mark.parametrize(
    ("ip", "operator"),
    [
        ("66.249.66.1", "Google"),
        ("66.249.95.255", "Google"),
        ("2001:4860:4801:10::1", "Google"),
        ("157.55.39.10", "Microsoft"),
        ("40.77.167.1", "Microsoft"),
        ("207.46.13.200", "Microsoft"),
        ("17.58.100.1", "Apple"),
    ],
)
def test_known_operator_ranges(ip: str, operator: str) -> None:
    assert network_of(ip) == operator


def test_just_outside_a_known_range_is_a_prefix() -> None:
    assert network_of("66.249.96.1") == "66.249.96.0/24"
    assert network_of("18.0.0.1") == "18.0.0.0/24"


def test_ipv4_mapped_ipv6_is_treated_as_ipv4() -> None:
    assert network_of("::ffff:203.0.113.9") == "203.0.113.0/24"
    assert network_of("::ffff:66.249.66.1") == "Google"


def test_the_address_itself_is_not_in_the_name() -> None:
    assert "113.7" not in network_of("203.0.113.7")
    assert network_of("2001:db8:1:2::5").endswith("::/48")


@pytest.mark.parametrize(
    "ip",
    ["", " ", "x", "1.2.3", "256.1.1.1", "01.2.3.4", "1.2.3.4/24", "::g", None, 1, b"1.2.3.4"],
)
def test_invalid_input_raises_value_error(ip) -> None:
    with pytest.raises(ValueError):
        network_of(ip)
