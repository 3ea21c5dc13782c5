"""app.context.country: registry data by default, an operator's MaxMind-format file instead, and
no country for what is not a public address."""

import pytest
from maxminddb.errors import InvalidDatabaseError

from app.context.country import MaxMindLookup, country, lookup_for, registry_lookup
from tests.fixtures.context import write_mmdb

# Prefixes with a country in the registries' files (ARIN, RIPE, APNIC) that iptocc bundles.
REGISTRY_CASES = [
    ("8.8.8.8", "US"),  # Google's resolver, registered by ARIN to a US organisation
    ("193.99.144.80", "DE"),  # heise.de, RIPE
    ("1.1.1.1", "AU"),  # APNIC's research prefix
    ("2001:4860:4860::8888", "US"),
    ("::ffff:193.99.144.80", "DE"),  # IPv4-mapped IPv6: looked up as its IPv4 address
]

NO_COUNTRY = [
    None, "", "10.1.2.3", "172.16.0.1", "192.168.1.1", "127.0.0.1", "::1", "169.254.10.10",
    "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "240.0.0.1", "fe80::1",
    "fe80::1%eth0", "fc00::1", "2001:db8::1", "192.0.2.1", "::ffff:10.0.0.1", "garbage",
    "1.2.3.4.5", "999.1.1.1", " 8.8.8.8", "8.8.8.8%eth0", "[2001:4860:4860::8888]",
    "8.8.8.8, 9.9.9.9", "\x00", "\ud800", "1" * 10_000,
]


@pytest.mark.parametrize(("address", "code"), REGISTRY_CASES)
def test_the_bundled_registry_data_names_the_country(address, code):
    assert country(address, registry_lookup) == code


@pytest.mark.parametrize("address", NO_COUNTRY)
def test_private_reserved_and_garbage_addresses_have_none(address):
    assert country(address, registry_lookup) is None


@pytest.fixture
def operator_db(tmp_path):
    # Countries that the registries do not say for these prefixes: proof the file was read.
    return write_mmdb(tmp_path / "country.mmdb", {
        "8.8.8.0/24": {"country": {"iso_code": "NZ"}},
        "2001:4860::/32": {"country": {"iso_code": "jp"}},
        "193.99.144.0/24": {"registered_country": {"iso_code": "DE"}},  # no country
        "1.1.1.0/24": {"country": {"iso_code": "Europe"}},  # not a code
    })


@pytest.mark.parametrize(("address", "code"), [
    ("8.8.8.8", "NZ"), ("::ffff:8.8.8.8", "NZ"), ("2001:4860:4860::8888", "JP"),
    ("193.99.144.80", None), ("1.1.1.1", None), ("9.9.9.9", None), ("10.0.0.1", None),
    ("fe80::1%eth0", None), ("garbage", None),
])
def test_an_operators_maxmind_file_replaces_the_registry_data(operator_db, address, code):
    lookup = lookup_for(str(operator_db))
    assert isinstance(lookup, MaxMindLookup)
    assert country(address, lookup) == code


def test_without_a_file_the_registry_data_is_used():
    assert lookup_for("") is registry_lookup
    assert lookup_for(None) is registry_lookup


def test_a_file_that_cannot_be_read_fails_when_the_lookup_is_built(tmp_path):
    with pytest.raises(FileNotFoundError):
        lookup_for(str(tmp_path / "missing.mmdb"))
    not_a_database = tmp_path / "empty.mmdb"
    not_a_database.write_bytes(b"not a maxmind database")
    with pytest.raises(InvalidDatabaseError):
        lookup_for(str(not_a_database))
