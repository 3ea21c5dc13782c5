"""When most of a dimension's visitors have no value, `warnings` says why, from what the database
holds: on tests/fixtures/shop.py's site (the `ask` fixture), ingested over HTTP from 127.0.0.1
(a local address: no country) by a browser (visitors A, B, C) and by a backend (D, E: no
browser context at all).
"""
import pytest

from tests.fixtures.shop import rows

NO_BROWSER = ("came without a browser's context (requests without an Origin header, from a "
              "backend or curl, or without a User-Agent)")
NO_COUNTRY = ("from browsers with an address of no country: private or reserved (a local "
              "network, or a proxy whose hops EGIS_TRUSTED_PROXIES does not trust) or unknown")
NO_REFERRER = ("their visits came without a referrer from another site (none was sent, or it "
               "was a page of the site itself)")


def test_a_dimension_with_values_for_most_visitors_has_no_warning(ask):
    """The valid variant first: the browser is unknown for 2 of 5 visitors (not most), the
    device known for every visitor of the visits not Direct: no sentence."""
    browsers = ask("query", metrics=["visitors"], dimensions=["visit:browser"])
    assert rows(browsers) == [("Chrome", 3), (None, 2)]
    assert browsers["warnings"] == []
    devices = ask("query", metrics=["visitors"], dimensions=["visit:device"],
                   filters=[["is_not", "visit:channel", ["Direct"]]])
    assert rows(devices) == [("Desktop", 3)]
    assert devices["warnings"] == []


@pytest.mark.parametrize("metrics", [["visitors"], ["visits"]], ids=["visitors", "visits"])
def test_no_country_says_which_came_from_browsers_and_which_from_backends(ask, metrics):
    """Local addresses have no country; without `visitors` among the metrics the shares are
    counted apart."""
    result = ask("query", metrics=metrics, dimensions=["visit:country"])
    assert rows(result) == [(None, 5 if metrics == ["visitors"] else 6)]
    assert result["warnings"] == [f"visit:country is null for 5 of 5 visitors (100.0 %): 2 "
                                  f"{NO_BROWSER}, 3 {NO_COUNTRY}."]


def test_no_device_where_backends_are_most(ask):
    result = ask("query", metrics=["visitors"], dimensions=["visit:device"],
                  filters=[["is", "visit:channel", ["Direct"]]])
    assert rows(result) == [(None, 2), ("Desktop", 1)]
    assert result["warnings"] == [
        f"visit:device is null for 2 of 3 visitors (66.7 %): 2 {NO_BROWSER}, 0 from browsers "
        "with no value for it (what it is read from was not sent: User-Agent, "
        "Accept-Language, the tracker's screen width)."]


@pytest.mark.parametrize(("dimension", "empty", "count", "reason"), [
    ("visit:utm_campaign", "null", 5,
     "their visit's entry page had no utm_campaign parameter in its URL"),
    ("visit:referrer", "null", 3, NO_REFERRER),
    ("visit:source", "(direct)", 3, NO_REFERRER),
], ids=["utm", "referrer", "source"])
def test_no_campaign_or_referrer(ask, dimension, empty, count, reason):
    result = ask("query", metrics=["visitors"], dimensions=[dimension])
    share = round(count / 5 * 100, 1)
    assert result["warnings"] == [
        f"{dimension} is {empty} for {count} of 5 visitors ({share} %): {reason}."]


def test_two_dimensions_count_each_visitor_once(ask):
    """With a second dimension a visitor may be in several rows: the share is counted
    apart."""
    result = ask("query", metrics=["visitors"], dimensions=["visit:country", "visit:device"])
    assert rows(result) == [(None, "Desktop", 3), (None, None, 2)]
    assert result["warnings"] == [
        f"visit:country is null for 5 of 5 visitors (100.0 %): 2 {NO_BROWSER}, 3 {NO_COUNTRY}."]
