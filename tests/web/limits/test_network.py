"""Whom a per-address limit counts (app.web.limits.network): the client behind trusted proxies, an
IPv6 client per /64, and a pseudonym, never the address, in a shared store."""
import hashlib

import pytest
import redis

from models.instance_secret import InstanceSecret
from tests.fixtures.limits import assert_limited, events
from tests.fixtures.tracking import (
    db,
)


@pytest.mark.parametrize(("trusted", "separate"), [(1, True), (0, False)])
def test_client_ip_through_proxy_fix(make_app, std_site, free_site, trusted, separate):
    client = make_app(TRUSTED_PROXIES=trusted, RATE_LIMIT_IP="2/minute").test_client()

    def send(site, forwarded_for):
        return events(client, site, **{"X-Forwarded-For": forwarded_for})

    assert send(std_site, "203.0.113.1").status_code == 200
    assert send(free_site, "203.0.113.1").status_code == 200
    assert send(std_site, "203.0.113.2").status_code == (200 if separate else 429)
    assert send(free_site, "203.0.113.1").status_code == 429
    if separate:  # only the last hop is trusted: a spoofed first hop changes nothing
        assert send(std_site, "198.51.100.7, 203.0.113.1").status_code == 429


@pytest.mark.parametrize(("first", "second", "shared"), [
    ("2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:fffe", True),  # one /64
    ("2001:db8:1:2::1", "2001:db8:1:3::1", False),  # the next /64
    ("203.0.113.1", "::ffff:203.0.113.1", True),  # IPv4 through a dual-stack socket
    ("203.0.113.1", "203.0.113.2", False),
    ("no:such:address", "no:such:address", True),  # a garbled header, counted as given
])
def test_an_ipv6_client_is_counted_per_64_network(make_app, std_site, first, second, shared):
    client = make_app(TRUSTED_PROXIES=1, RATE_LIMIT_IP="2/minute").test_client()

    def send(forwarded_for):
        return events(client, std_site, **{"X-Forwarded-For": forwarded_for})

    for _ in range(2):
        assert send(first).status_code == 200
    assert_limited(send(first))
    if shared:
        assert_limited(send(second))
    else:
        assert send(second).status_code == 200


def test_a_shared_store_holds_no_client_address(make_app, std_site, own_redis):
    """In Redis a client is counted under a keyed hash of its address, the key a secret kept in
    the database: a snapshot or a listing of the store shows no address, and the budgets hold."""
    app = make_app(RATELIMIT_STORAGE_URI=own_redis.url, TRUSTED_PROXIES=1,
                   RATE_LIMIT_IP="2/minute", RATE_LIMIT_VALIDATE="1/minute")
    client = app.test_client()

    def validate(forwarded_for):
        return client.get("/api/validate",
                          headers=std_site.write_headers(**{"X-Forwarded-For": forwarded_for}))

    for address in ("2001:db8:7:7::1", "2001:db8:7:7::2"):
        assert events(client, std_site, **{"X-Forwarded-For": address}).status_code == 200
    assert_limited(events(client, std_site, **{"X-Forwarded-For": "2001:db8:7:7::3"}))
    assert events(client, std_site, **{"X-Forwarded-For": "198.51.100.9"}).status_code == 200
    assert validate("198.51.100.9").status_code == 200
    assert_limited(validate("198.51.100.9"))

    keys = list(redis.Redis.from_url(own_redis.url, decode_responses=True).scan_iter())
    assert not [key for key in keys if "2001" in key or "198.51" in key], keys
    with db(app):
        secret = InstanceSecret.named("limits")
    for network, counters in (("2001:db8:7:7::/64", 1), ("198.51.100.9", 2)):  # per-ip, validate
        pseudonym = hashlib.blake2b(network.encode(), key=secret, digest_size=16).hexdigest()
        assert len([key for key in keys if f"/{pseudonym}/" in key]) == counters, keys

