"""Known referrers read from app/context/data/referrers.csv (app.context.referrers): a host by
its own row or its nearest parent domain's, then a `label.*` row before a top-level domain; a
bare word matches a utm_source only."""
from app.context import referrers
from app.context.referrers import KINDS, Referrer, by_host, by_source


def test_a_host_matches_its_own_row():
    assert by_host("bing.com") == Referrer("Bing", "search")
    assert by_host("news.ycombinator.com") == Referrer("Hacker News", "social")
    assert by_host("chatgpt.com") == Referrer("ChatGPT", "ai")


def test_a_subdomain_matches_its_nearest_parent_row():
    assert by_host("m.facebook.com") == Referrer("Facebook", "social")
    assert by_host("l.m.facebook.com") == Referrer("Facebook", "social")
    assert by_host("facebook.com.evil.example") is None  # a parent, never a child


def test_a_label_row_matches_before_a_country_domain_only():
    assert by_host("google.de") == Referrer("Google", "search")
    assert by_host("google.co.uk") == Referrer("Google", "search")
    assert by_host("google.evil.example") is None  # not a top-level domain after the label
    assert by_host("google.example.co.uk") is None


def test_an_unknown_host_is_no_referrer():
    assert by_host("blog.example") is None
    assert by_host("example") is None


def test_a_bare_word_names_a_source_but_is_no_host():
    assert by_source("fb") == Referrer("Facebook", "social")
    assert by_source(" Google ") == Referrer("Google", "search")
    assert by_source("www.bing.com") == Referrer("Bing", "search")
    assert by_host("fb") is None
    assert by_source("newsletter-42") is None


def test_every_row_of_the_table_is_read_with_a_known_kind():
    rows = referrers.HOSTS | referrers.LABELS | referrers.WORDS
    assert len(rows) > 100
    assert {known.kind for known in rows.values()} <= set(KINDS)
    assert all(match == match.lower() for match in rows)
