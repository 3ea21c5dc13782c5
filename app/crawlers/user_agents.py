"""Classify a User-Agent as a browser or a bot, and place the bot in a category.

Names and categories come from device_detector's packaged copy of Matomo's bot list; this
module only maps Matomo's categories to ours and overrides the few bots the list files in a
category that does not fit our report (see _NAME_CATEGORIES).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from device_detector import DeviceDetector
from device_detector.enums import AppType
from device_detector.parser import Bot
from device_detector.parser.client import Library
from device_detector.utils import clean_ua

AI_TRAINING = "ai_training"
AI_SEARCH = "ai_search"
AI_USER = "ai_user"
SEARCH_ENGINE = "search_engine"
SEO = "seo"
MONITOR = "monitor"
UNKNOWN = "unknown"
BROWSER = "browser"

BOT_CATEGORIES: tuple[str, ...] = (
    AI_TRAINING,
    AI_SEARCH,
    AI_USER,
    SEARCH_ENGINE,
    SEO,
    MONITOR,
    UNKNOWN,
)
CATEGORIES: tuple[str, ...] = (*BOT_CATEGORIES, BROWSER)

CACHE_SIZE = 4096
# Real user agents are a few hundred characters; the cap bounds the parse cost and the
# cache's memory when a client sends huge, ever-changing values.
MAX_USER_AGENT_LENGTH = 1024


@dataclass(frozen=True)
class Crawler:
    name: str | None
    category: str
    is_bot: bool
    # Reverse-DNS suffixes the crawler's operator publishes for verification; empty when the
    # crawler cannot be verified that way.
    verify_domains: tuple[str, ...] = ()
    # Matomo's own category (or "Library" for HTTP clients), kept for finer reporting.
    list_category: str | None = None


BROWSER_CLIENT = Crawler(name=None, category=BROWSER, is_bot=False)
EMPTY_USER_AGENT = Crawler(name=None, category=UNKNOWN, is_bot=True)

_LIST_CATEGORIES: dict[str, str] = {
    "Search bot": SEARCH_ENGINE,
    "Search tools": SEARCH_ENGINE,
    "AI Data Scraper": AI_TRAINING,
    "AI Search Crawler": AI_SEARCH,
    "AI Assistant": AI_USER,
    "AI Agent": AI_USER,
    "Site Monitor": MONITOR,
    "Network Monitor": MONITOR,
    "Benchmark": MONITOR,
    "Validator": MONITOR,
    # Everything else ("Crawler", feed fetchers, social-media previews, service agents,
    # security scanners, ...) is UNKNOWN: the list does not say what those bots are for.
}

# Keyed by the list's bot name. The list has AI categories, but files some AI crawlers by
# their old role (Bytespider as a search bot, CCBot as a generic crawler, Meta's training
# crawler as an assistant), has no SEO category at all, and calls some search engines
# generic crawlers. Keep this table to what the list gets wrong for our report; a test checks
# every name still exists in the packaged list.
_NAME_CATEGORIES: dict[str, str] = {
    # Operators document these as collecting AI training data.
    "Amazonbot": AI_TRAINING,
    "Bytespider": AI_TRAINING,
    "ccBot crawler": AI_TRAINING,
    "FacebookBot": AI_TRAINING,
    "img2dataset": AI_TRAINING,
    "Meta-ExternalAgent": AI_TRAINING,
    # Fetches a page when a Meta AI user asks for it.
    "Meta-ExternalFetcher": AI_USER,
    # Applebot feeds Siri/Spotlight search; AI training is the separate Applebot-Extended.
    "Applebot": SEARCH_ENGINE,
    "Petal Bot": SEARCH_ENGINE,
    "Qwantbot": SEARCH_ENGINE,
    # SEO and backlink tools.
    "aHrefs Bot": SEO,
    "AhrefsSiteAudit": SEO,
    "Barkrowler": SEO,
    "BLEXBot Crawler": SEO,
    "Botify": SEO,
    "DataForSeoBot": SEO,
    "DotBot": SEO,
    "Lumar": SEO,
    "MJ12 Bot": SEO,
    "MegaIndex": SEO,
    "Rogerbot": SEO,
    "Screaming Frog SEO Spider": SEO,
    "SemrushBot": SEO,
    "SEOkicks": SEO,
    "Seobility": SEO,
    "serpstatbot": SEO,
    "SERankingBacklinksBot": SEO,
    "SiteAuditBot": SEO,
    "Sitebulb": SEO,
    "SISTRIX Crawler": SEO,
}

_GOOGLE_DOMAINS = ("googlebot.com", "google.com")
_YANDEX_DOMAINS = ("yandex.ru", "yandex.net", "yandex.com")
_VERIFY_DOMAINS: dict[str, tuple[str, ...]] = {
    "BingBot": ("search.msn.com",),
    "Applebot": ("applebot.apple.com",),
    "Baidu Spider": ("baidu.com", "baidu.jp"),
    "Petal Bot": ("petalsearch.com",),
    "Amazonbot": ("crawl.amazonbot.amazon",),
}
# Google's crawlers resolve to *.googlebot.com or *.google.com. Its user-triggered fetchers
# (Feedfetcher, Site Verification, ...), which the list also names "Googlebot", come from
# *.googleusercontent.com, a domain Google Cloud customers' VMs share: a suffix match cannot
# verify them, so they get no domains rather than a false "spoofed".
_GOOGLE_CRAWLER_TOKENS = re.compile(
    r"Googlebot|Storebot-Google|Google-InspectionTool|GoogleOther|Google-CloudVertexBot"
    r"|AdsBot-Google|Mediapartners-Google|APIs-Google|Google-Safety"
)

# Automation tools the list does not know as bots; they would pass as browsers.
_AUTOMATION_MARKERS: dict[str, str] = {
    "headlesschrome": "HeadlessChrome",
    "phantomjs": "PhantomJS",
    "slimerjs": "SlimerJS",
    "htmlunit": "HtmlUnit",
    "puppeteer": "Puppeteer",
    "playwright": "Playwright",
    "selenium": "Selenium",
    "webdriver": "WebDriver",
    "jsdom": "jsdom",
    "cypress": "Cypress",
}
_AUTOMATION_RE = re.compile(
    r"\b(" + "|".join(map(re.escape, _AUTOMATION_MARKERS)) + r")\b", re.IGNORECASE
)

# Fast path: the exact, frozen ("reduced") user agents of current Chrome, Edge, Firefox and
# Safari. It must match the whole string, so any extra token a bot appends (Googlebot,
# Applebot, HeadlessChrome, ...) makes it fall through to the full parse. A test checks these
# strings are also browsers for the full parse.
_PLAIN_BROWSER = re.compile(
    r"Mozilla/5\.0 \((?:"
    r"(?:Windows NT 10\.0; Win64; x64|Macintosh; Intel Mac OS X 10_15_7|X11; Linux x86_64"
    r"|X11; CrOS (?:x86_64|aarch64) \d+\.\d+\.\d+|Linux; Android 10; K)"
    r"\) AppleWebKit/537\.36 \(KHTML, like Gecko\) Chrome/\d{2,3}\.0\.0\.0 (?:Mobile )?"
    r"Safari/537\.36(?: Edg/\d{2,3}\.0\.\d{1,5}\.\d{1,5})?"
    r"|(?:Windows NT 10\.0; Win64; x64|Macintosh; Intel Mac OS X 10\.\d{1,2}"
    r"|X11; (?:Ubuntu; )?Linux x86_64|Android \d{1,2}; Mobile)"
    r"; rv:\d{2,3}\.\d\) Gecko/(?:20100101|\d{2,3}\.\d) Firefox/\d{2,3}\.\d"
    r"|Macintosh; Intel Mac OS X 10_15_7\) AppleWebKit/605\.1\.15 \(KHTML, like Gecko\)"
    r" Version/\d{2}(?:\.\d{1,2}){0,2} Safari/605\.1\.15"
    r"|(?:iPhone; CPU iPhone|iPad; CPU) OS \d{2}(?:_\d{1,2}){0,2} like Mac OS X\)"
    r" AppleWebKit/605\.1\.15 \(KHTML, like Gecko\) Version/\d{2}(?:\.\d{1,2}){0,2}"
    r" Mobile/\w{1,12} Safari/604\.1"
    r")",
    re.ASCII,
)


def classify(user_agent: str) -> Crawler:
    """Classify a User-Agent header value. Cached: repeated values cost microseconds."""
    return _classify_cached((user_agent or "")[:MAX_USER_AGENT_LENGTH])


def is_bot(user_agent: str) -> bool:
    """True for a known bot, a headless/automation browser, an HTTP library or an empty UA."""
    return classify(user_agent).is_bot


def clear_cache() -> None:
    _classify_cached.cache_clear()


def warm_up() -> None:
    """Compile the bot and library lists now (about a second) rather than during the first
    requests.

    device_detector compiles its regexes lazily, on first use of each; these user agents walk
    the two lists the way common traffic does.
    """
    for user_agent in _WARM_UP_USER_AGENTS:
        _classify_with_list(user_agent)


_WARM_UP_USER_AGENTS = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.6367.91 Safari/537.36",
    "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) "
    "SamsungBrowser/24.0 Chrome/117.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Mobile/15E148",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 "
    "(KHTML, like Gecko) Chrome/124.0.6367.201 Mobile Safari/537.36 "
    "(compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; "
    "+https://openai.com/gptbot)",
)


@lru_cache(maxsize=CACHE_SIZE)
def _classify_cached(user_agent: str) -> Crawler:
    if not user_agent.strip():
        return EMPTY_USER_AGENT
    if _PLAIN_BROWSER.fullmatch(user_agent):
        return BROWSER_CLIENT
    return _classify_with_list(user_agent)


def _classify_with_list(user_agent: str) -> Crawler:
    """What device_detector's full parse says, from its bot and library lists alone.

    The full parse (bots, operating systems, then a dozen client lists, browsers last but one,
    libraries last) compiles and keeps every list: 28 MiB per worker, where the bot and library
    lists take 11 (bench/README.md, "Memory per worker"). A user agent is a library only if the
    library list matches it and no client list before it does, so the full parse runs only for
    those the library list matches: the same answers, and browser traffic never loads the rest.
    """
    cleaned = clean_ua(user_agent, user_agent.lower())  # as DeviceDetector does
    bot = Bot(cleaned, None).parse().ua_data
    if bot:
        return _listed_bot(bot.get("name") or None, bot.get("category") or None, user_agent)
    marker = _AUTOMATION_RE.search(user_agent)
    if marker:
        name = _AUTOMATION_MARKERS[marker.group(1).lower()]
        return Crawler(name=name, category=UNKNOWN, is_bot=True)
    if not Library(cleaned, None).parse().ua_data:
        return BROWSER_CLIENT
    detector = DeviceDetector(user_agent, skip_bot_detection=True, skip_device_detection=True,
                              check_cache=False).parse()
    if detector.client_type() == AppType.Library:
        name = detector.client_name() or None
        return Crawler(name=name, category=UNKNOWN, is_bot=True, list_category="Library")
    return BROWSER_CLIENT


def _listed_bot(name: str | None, list_category: str | None, user_agent: str) -> Crawler:
    category = _NAME_CATEGORIES.get(name or "") or _LIST_CATEGORIES.get(
        list_category or "", UNKNOWN
    )
    return Crawler(
        name=name,
        category=category,
        is_bot=True,
        verify_domains=_verify_domains(name or "", user_agent),
        list_category=list_category,
    )


def _verify_domains(name: str, user_agent: str) -> tuple[str, ...]:
    if name in _VERIFY_DOMAINS:
        return _VERIFY_DOMAINS[name]
    if name.startswith("Yandex"):
        return _YANDEX_DOMAINS
    if name.startswith("Google") and _GOOGLE_CRAWLER_TOKENS.search(user_agent):
        return _GOOGLE_DOMAINS
    return ()


__all__ = [
    "AI_SEARCH",
    "AI_TRAINING",
    "AI_USER",
    "BOT_CATEGORIES",
    "BROWSER",
    "BROWSER_CLIENT",
    "CATEGORIES",
    "MONITOR",
    "SEARCH_ENGINE",
    "SEO",
    "UNKNOWN",
    "Crawler",
    "classify",
    "clear_cache",
    "is_bot",
    "warm_up",
]
