"""app.context.acquisition and app.context.referrers: each source and channel rule, in its order,
the referrer without query, the UTM values, and the page's path and host."""
import pytest

from app.context import referrers
from app.context.acquisition import (
    CHANNELS,
    COLUMNS,
    NOT_A_PAGE_VIEW,
    Acquisition,
    acquisition,
    page_location,
)

SITE = "std.example"
PAGE = "https://std.example/pricing"


def channel(page_url: str = PAGE, referrer: str | None = None) -> str:
    return acquisition(page_url, referrer, SITE).channel


def source(page_url: str = PAGE, referrer: str | None = None) -> str:
    return acquisition(page_url, referrer, SITE).source


# --- source -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("page_url", "referrer", "expected"), [
    # utm_source first, as given (case and all), whatever the referrer.
    (PAGE + "?utm_source=Spring_Newsletter", "https://www.google.com/", "Spring_Newsletter"),
    (PAGE + "?utm_source=chatgpt.com", None, "chatgpt.com"),
    (PAGE + "?utm_source=a&utm_source=b", None, "a"),  # the first one
    # Else the known name of the referrer's host.
    (PAGE, "https://www.google.com/search?q=secret", "Google"),
    (PAGE, "https://www.google.co.uk/", "Google"),
    (PAGE, "https://google.de/", "Google"),
    (PAGE, "https://news.google.com/articles/x", "Google"),
    (PAGE, "https://www.bing.com/", "Bing"),
    (PAGE, "https://duckduckgo.com/", "DuckDuckGo"),
    (PAGE, "https://m.facebook.com/", "Facebook"),
    (PAGE, "https://l.facebook.com/l.php?u=x", "Facebook"),
    (PAGE, "https://t.co/abc", "X"),
    (PAGE, "https://x.com/someone/status/1", "X"),
    (PAGE, "https://www.linkedin.com/feed/", "LinkedIn"),
    (PAGE, "https://old.reddit.com/r/python/", "Reddit"),
    (PAGE, "https://news.ycombinator.com/item?id=1", "Hacker News"),
    (PAGE, "https://github.com/owner/repo", "GitHub"),
    (PAGE, "https://chatgpt.com/", "ChatGPT"),
    (PAGE, "https://www.perplexity.ai/search/x", "Perplexity"),
    (PAGE, "https://mail.google.com/mail/u/0/", "Gmail"),
    (PAGE, "android-app://com.google.android.gm/", "Gmail"),
    # Else the referrer's host without www.
    (PAGE, "https://www.Blog.Example:8443/post?id=1", "blog.example"),
    (PAGE, "https://google.evil.example/", "google.evil.example"),
    # Else (direct): no referrer, the site itself, or no URL.
    (PAGE, None, "(direct)"),
    (PAGE, "", "(direct)"),
    (PAGE, "https://std.example/other", "(direct)"),
    (PAGE, "https://www.std.example/other", "(direct)"),
    (PAGE, "http://shop.std.example:8080/", "(direct)"),
    (PAGE, "not a url", "(direct)"),
    (PAGE, "http://[::1", "(direct)"),
    (PAGE, "https://example.com:99999/", "(direct)"),
])
def test_source(page_url, referrer, expected):
    assert source(page_url, referrer) == expected


# --- channel: each rule of the module docstring, in its order ---------------------------------

def test_rule_1_direct_without_campaign_or_outside_referrer():
    assert channel() == "Direct"
    assert channel(referrer="https://std.example/") == "Direct"  # the site itself
    assert channel(PAGE + "?utm_campaign=spring") == "Direct"  # no source, medium, click id


@pytest.mark.parametrize(("page_url", "referrer"), [
    (PAGE + "?gclid=abc", None),
    (PAGE + "?msclkid=abc", "https://www.bing.com/"),
    (PAGE + "?gbraid=abc", None),
    (PAGE + "?wbraid=abc&utm_medium=email", None),  # a click id outranks the medium
    (PAGE + "?utm_source=google&utm_medium=cpc", None),
    (PAGE + "?utm_source=bing&utm_medium=ppc", None),
    (PAGE + "?utm_source=spring&utm_medium=paid_search", "https://www.google.de/"),
])
def test_rule_2_paid_search(page_url, referrer):
    assert channel(page_url, referrer) == "Paid Search"


@pytest.mark.parametrize("page_url", [
    PAGE + "?utm_source=facebook&utm_medium=cpc",
    PAGE + "?utm_source=fb&utm_medium=paid",
    PAGE + "?utm_source=linkedin&utm_medium=paid-social",
    PAGE + "?utm_source=ig&utm_medium=CPM",
])
def test_rule_3_paid_social(page_url):
    assert channel(page_url) == "Paid Social"


def test_rule_4_other_paid_traffic_is_other():
    assert channel(PAGE + "?utm_source=adnetwork&utm_medium=cpc") == "Other"
    assert channel(PAGE + "?utm_source=chatgpt&utm_medium=retargeting") == "Other"


@pytest.mark.parametrize(("page_url", "referrer"), [
    (PAGE + "?utm_source=weekly&utm_medium=email", None),
    (PAGE + "?utm_source=weekly&utm_medium=Newsletter", None),
    (PAGE + "?utm_source=newsletter", None),
    (PAGE + "?utm_source=e-mail&utm_medium=whatever", None),
    (PAGE + "?utm_source=google&utm_medium=email", None),  # e-mail outranks the kind
    (PAGE, "https://mail.google.com/"),
    (PAGE, "https://outlook.live.com/mail/0/"),
    (PAGE, "android-app://com.google.android.gm/"),
])
def test_rule_5_email(page_url, referrer):
    assert channel(page_url, referrer) == "Email"


@pytest.mark.parametrize(("page_url", "referrer"), [
    (PAGE, "https://chatgpt.com/"),
    (PAGE + "?utm_source=chatgpt.com", None),  # ChatGPT tags its links so
    (PAGE, "https://www.perplexity.ai/"),
    (PAGE, "https://claude.ai/chat/1"),
    (PAGE, "https://gemini.google.com/app"),  # not Google search
    (PAGE, "https://copilot.microsoft.com/"),
])
def test_rule_6_ai_assistants(page_url, referrer):
    assert channel(page_url, referrer) == "AI Assistants"


@pytest.mark.parametrize(("page_url", "referrer"), [
    (PAGE, "https://www.google.com/"),
    (PAGE, "https://www.google.com.br/"),
    (PAGE, "https://duckduckgo.com/"),
    (PAGE, "https://search.brave.com/search?q=x"),
    (PAGE, "android-app://com.google.android.googlequicksearchbox/"),
    (PAGE + "?utm_source=google", None),
    (PAGE + "?utm_source=partner&utm_medium=organic", None),
])
def test_rule_7_organic_search(page_url, referrer):
    assert channel(page_url, referrer) == "Organic Search"


@pytest.mark.parametrize(("page_url", "referrer"), [
    (PAGE, "https://l.facebook.com/"),
    (PAGE, "https://t.co/x"),
    (PAGE, "https://www.reddit.com/"),
    (PAGE, "https://news.ycombinator.com/"),
    (PAGE, "https://www.youtube.com/watch?v=1"),
    (PAGE + "?utm_source=twitter", None),
    (PAGE + "?utm_source=mastodon.example&utm_medium=social", None),
    (PAGE + "?utm_source=club&utm_medium=social-media", "https://forum.example/"),
])
def test_rule_8_organic_social(page_url, referrer):
    assert channel(page_url, referrer) == "Organic Social"


@pytest.mark.parametrize(("page_url", "referrer"), [
    (PAGE, "https://blog.example/post"),
    (PAGE, "https://github.com/owner/repo"),  # named, but of no kind
    (PAGE + "?utm_source=partner", "https://partner.example/"),
    (PAGE + "?utm_source=partner&utm_medium=referral", None),
    (PAGE + "?utm_source=app&utm_medium=app", None),
])
def test_rule_9_referral(page_url, referrer):
    assert channel(page_url, referrer) == "Referral"


@pytest.mark.parametrize(("page_url", "referrer"), [
    (PAGE + "?utm_source=partner", None),  # a source, but no referrer and no medium
    (PAGE + "?utm_medium=banner", None),
    (PAGE + "?utm_source=partner&utm_medium=banner", "https://partner.example/"),
])
def test_rule_10_other(page_url, referrer):
    assert channel(page_url, referrer) == "Other"


def test_every_channel_is_one_of_designs_nine():
    assert CHANNELS == ("Direct", "Organic Search", "Paid Search", "Organic Social",
                        "Paid Social", "Email", "AI Assistants", "Referral", "Other")


# --- referrer_url and UTM values --------------------------------------------------------------

@pytest.mark.parametrize(("referrer", "expected"), [
    ("https://www.google.com/search?q=secret#frag", "https://www.google.com/search"),
    ("https://user:password@blog.example:8443/a/b?x=1", "https://blog.example:8443/a/b"),
    ("HTTPS://Blog.Example/Post", "https://blog.example/Post"),
    ("http://[2001:db8::1]:8080/x?y", "http://[2001:db8::1]:8080/x"),
    ("android-app://com.google.android.gm/", "android-app://com.google.android.gm/"),
    (None, None), ("", None), ("https://std.example/a?b", None), ("garbage", None),
])
def test_referrer_url_is_the_referrer_without_query_fragment_or_credentials(referrer,
                                                                              expected):
    assert acquisition(PAGE, referrer, SITE).referrer_url == expected


def test_utm_values_as_given_and_click_ids_never_kept():
    found = acquisition(
        PAGE + "?utm_source=News%20Letter&utm_medium=email&utm_campaign=Spring+Sale"
        "&utm_content=hero&utm_term=running%20shoes&gclid=SECRET123&utm_source=second"
        "&utm_campaign=#top", None, SITE)
    assert found == Acquisition(
        source="News Letter", channel="Paid Search", referrer_url=None,
        utm_source="News Letter", utm_medium="email", utm_campaign="Spring Sale",
        utm_content="hero", utm_term="running shoes")
    assert "SECRET123" not in repr(found.columns())


@pytest.mark.parametrize("query", ["utm_source=%00x", "utm_source=a%0Ab", "utm_source=",
                                   "utm_source", "utm_source=%ED%A0%80"])
def test_utm_values_that_cannot_be_stored_are_null(query):
    found = acquisition(f"{PAGE}?{query}", None, SITE)
    assert found.utm_source in (None, "\ufffd\ufffd\ufffd")
    assert found.source in ("(direct)", "\ufffd\ufffd\ufffd")


def test_a_fragment_is_not_a_query():
    assert acquisition(PAGE + "#utm_source=x", None, SITE).utm_source is None


def test_columns_name_the_event_columns():
    assert set(acquisition(PAGE, None, SITE).columns()) == set(COLUMNS) == set(NOT_A_PAGE_VIEW)
    assert set(COLUMNS) == {"source", "channel", "referrer_url", "utm_source", "utm_medium",
                            "utm_campaign", "utm_content", "utm_term"}


# --- path and hostname ------------------------------------------------------------------------

@pytest.mark.parametrize(("page_url", "expected"), [
    ("https://www.Std.Example/Pricing/?a=1#b", ("/Pricing/", "std.example")),
    ("https://std.example", ("/", "std.example")),
    ("http://shop.std.example:8080/cart", ("/cart", "shop.std.example")),
    ("https://www.std.example./x", ("/x", "std.example")),
    ("https://[2001:db8::1]/x", ("/x", "2001:db8::1")),
    ("/checkout?step=2", ("/checkout", None)),
    ("checkout", (None, None)),
    ("", (None, None)),
    (None, (None, None)),
    ("http://[::1/x", (None, None)),
    ("https://" + "a" * 300 + ".example/x", ("/x", None)),
    ("https://std.example/a\x7fb", (None, "std.example")),
])
def test_page_location(page_url, expected):
    assert page_location(page_url) == expected


# --- the table --------------------------------------------------------------------------------

@pytest.mark.parametrize(("host", "name", "kind"), [
    ("google.com", "Google", "search"),
    ("google.co.uk", "Google", "search"),
    ("google.de", "Google", "search"),
    ("mail.google.com", "Gmail", "email"),  # the more specific row wins
    ("gemini.google.com", "Gemini", "ai"),
    ("search.yahoo.com", "Yahoo!", "search"),
    ("mail.yahoo.com", "Yahoo! Mail", "email"),
    ("yahoo.co.jp", "Yahoo!", "search"),
    ("github.com", "GitHub", ""),
])
def test_the_table_matches_hosts_parents_and_labels(host, name, kind):
    assert referrers.by_host(host) == referrers.Referrer(name, kind)


@pytest.mark.parametrize("host", ["google.evil.example", "notgoogle.com", "example.com",
                                  "com", "google", "fb"])
def test_the_table_does_not_match_lookalikes_or_bare_words_as_hosts(host):
    assert referrers.by_host(host) is None


def test_bare_words_match_a_utm_source():
    assert referrers.by_source(" FB ") == referrers.Referrer("Facebook", "social")
    assert referrers.by_source("www.chatgpt.com") == referrers.Referrer("ChatGPT", "ai")
    assert referrers.by_source("spring") is None


def test_every_row_has_a_known_kind_and_the_designs_names_are_there():
    names = {known.name for table in (referrers.HOSTS, referrers.LABELS, referrers.WORDS)
             for known in table.values()}
    assert {"Google", "Bing", "DuckDuckGo", "Facebook", "X", "LinkedIn", "Reddit",
            "Hacker News", "GitHub", "ChatGPT", "Perplexity"} <= names
    for table in (referrers.HOSTS, referrers.LABELS, referrers.WORDS):
        assert all(known.kind in referrers.KINDS for known in table.values())
        assert all(match == match.lower() for match in table)
