from importlib import resources

import pytest
import yaml
from device_detector import DeviceDetector
from device_detector.enums import AppType
from device_detector.parser.client import Library

from app.crawlers import user_agents
from app.crawlers.user_agents import (
    AI_SEARCH,
    AI_TRAINING,
    AI_USER,
    BROWSER,
    MONITOR,
    SEARCH_ENGINE,
    SEO,
    UNKNOWN,
    Crawler,
    classify,
    is_bot,
)

CHROME = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.0.0 Safari/537.36"
)
CHROME_ANDROID = (
    "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.0.0 Mobile Safari/537.36"
)
CHROME_MAC = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.0.0 Safari/537.36"
)
FIREFOX = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0"
FIREFOX_LINUX = "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:126.0) Gecko/20100101 Firefox/126.0"
FIREFOX_ANDROID = "Mozilla/5.0 (Android 14; Mobile; rv:125.0) Gecko/125.0 Firefox/125.0"
SAFARI_MAC = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.4.1 Safari/605.1.15"
)
SAFARI_IOS = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"
)
SAFARI_IPAD = (
    "Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/16.6 Mobile/15E148 Safari/604.1"
)
EDGE = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.0.0 Safari/537.36 Edg/124.0.2478.67"
)
SAMSUNG = (
    "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) "
    "SamsungBrowser/24.0 Chrome/117.0.0.0 Mobile Safari/537.36"
)
CHROME_IOS = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) CriOS/124.0.6367.88 Mobile/15E148 Safari/604.1"
)
OPERA = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.0.0 Safari/537.36 OPR/111.0.0.0"
)
FACEBOOK_IN_APP = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Mobile/15E148 [FBAN/FBIOS;FBAV/458.0.0.37.107;FBBV/585587838;"
    "FBDV/iPhone15,2;FBMD/iPhone;FBSN/iOS;FBSV/17.4;FBSS/3;FBID/phone;FBLC/en_US;FBOP/5]"
)

GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
GOOGLEBOT_SMARTPHONE = (
    "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 "
    "(KHTML, like Gecko) Chrome/124.0.6367.201 Mobile Safari/537.36 "
    "(compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
)
BINGBOT = (
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; "
    "+http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36"
)
APPLEBOT = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)"
)
HEADLESS_CHROME = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "HeadlessChrome/124.0.0.0 Safari/537.36"
)
PHANTOMJS = (
    "Mozilla/5.0 (Unknown; Linux x86_64) AppleWebKit/538.1 (KHTML, like Gecko) "
    "PhantomJS/2.1.1 Safari/538.1"
)

BROWSERS = [
    CHROME,
    CHROME_ANDROID,
    CHROME_MAC,
    FIREFOX,
    FIREFOX_LINUX,
    FIREFOX_ANDROID,
    SAFARI_MAC,
    SAFARI_IOS,
    SAFARI_IPAD,
    EDGE,
    SAMSUNG,
    CHROME_IOS,
    OPERA,
    FACEBOOK_IN_APP,
]

# user agent, expected name, expected category
BOTS = [
    (GOOGLEBOT, "Googlebot", SEARCH_ENGINE),
    (GOOGLEBOT_SMARTPHONE, "Googlebot", SEARCH_ENGINE),
    (BINGBOT, "BingBot", SEARCH_ENGINE),
    (APPLEBOT, "Applebot", SEARCH_ENGINE),
    (
        "Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)",
        "YandexBot",
        SEARCH_ENGINE,
    ),
    (
        "Mozilla/5.0 (compatible; Baiduspider/2.0; +http://www.baidu.com/search/spider.html)",
        "Baidu Spider",
        SEARCH_ENGINE,
    ),
    (
        "Mozilla/5.0 (Linux; Android 7.0;) AppleWebKit/537.36 (KHTML, like Gecko) Mobile "
        "Safari/537.36 (compatible; PetalBot;+https://webmaster.petalsearch.com/site/petalbot)",
        "Petal Bot",
        SEARCH_ENGINE,
    ),
    ("DuckDuckBot/1.1; (+http://duckduckgo.com/duckduckbot.html)", "DuckDuckBot", SEARCH_ENGINE),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; "
        "+https://openai.com/gptbot)",
        "GPTBot",
        AI_TRAINING,
    ),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; "
        "+claudebot@anthropic.com)",
        "ClaudeBot",
        AI_TRAINING,
    ),
    ("anthropic-ai", "Anthropic AI", AI_TRAINING),
    ("CCBot/2.0 (https://commoncrawl.org/faq/)", "ccBot crawler", AI_TRAINING),
    (
        "Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile "
        "Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)",
        "Bytespider",
        AI_TRAINING,
    ),
    (
        "meta-externalagent/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)",
        "Meta-ExternalAgent",
        AI_TRAINING,
    ),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Amazonbot/0.1; "
        "+https://developer.amazon.com/support/amazonbot) Chrome/119.0.6045.214 Safari/537.36",
        "Amazonbot",
        AI_TRAINING,
    ),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-SearchBot/1.0; "
        "+https://openai.com/searchbot",
        "OAI-SearchBot",
        AI_SEARCH,
    ),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; "
        "+https://perplexity.ai/perplexitybot)",
        "PerplexityBot",
        AI_SEARCH,
    ),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-SearchBot/1.0; "
        "+Claude-SearchBot@anthropic.com)",
        "Claude-SearchBot",
        AI_SEARCH,
    ),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; "
        "+https://openai.com/bot",
        "ChatGPT-User",
        AI_USER,
    ),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-User/1.0; "
        "+Claude-User@anthropic.com)",
        "Claude-User",
        AI_USER,
    ),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Perplexity-User/1.0; "
        "+https://perplexity.ai/perplexity-user)",
        "Perplexity-User",
        AI_USER,
    ),
    (
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; MistralAI-User/1.0; "
        "+https://docs.mistral.ai/robots)",
        "MistralAI-User",
        AI_USER,
    ),
    ("Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)", "aHrefs Bot", SEO),
    (
        "Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)",
        "SemrushBot",
        SEO,
    ),
    ("Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)", "MJ12 Bot", SEO),
    ("Mozilla/5.0 (compatible; DotBot/1.2; +https://opensiteexplorer.org/dotbot)", "DotBot", SEO),
    (
        "Mozilla/5.0+(compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)",
        "UptimeRobot",
        MONITOR,
    ),
    ("Pingdom.com_bot_version_1.4_(http://www.pingdom.com/)", "Pingdom Bot", MONITOR),
    (HEADLESS_CHROME, "HeadlessChrome", UNKNOWN),
    (PHANTOMJS, "PhantomJS", UNKNOWN),
    ("python-requests/2.31.0", "Python Requests", UNKNOWN),
    ("curl/8.5.0", "curl", UNKNOWN),
    ("Wget/1.21.4", "Wget", UNKNOWN),
    ("Go-http-client/1.1", "Go-http-client", UNKNOWN),
    ("Scrapy/2.11.0 (+https://scrapy.org)", "Scrapy", UNKNOWN),
    ("FeedFetcher-Google; (+http://www.google.com/feedfetcher.html)", "Googlebot", SEARCH_ENGINE),
]


@pytest.mark.parametrize("user_agent", BROWSERS)
def test_real_browsers_are_not_bots(user_agent: str) -> None:
    assert classify(user_agent) == Crawler(name=None, category=BROWSER, is_bot=False)
    assert is_bot(user_agent) is False


@pytest.mark.parametrize(("user_agent", "name", "category"), BOTS)
def test_bots_are_named_and_placed(user_agent: str, name: str, category: str) -> None:
    crawler = classify(user_agent)
    assert (crawler.name, crawler.category, crawler.is_bot) == (name, category, True)
    assert is_bot(user_agent) is True


@pytest.mark.parametrize("user_agent", ["", "   ", None])
def test_empty_user_agent_is_an_unknown_bot(user_agent: str) -> None:
    assert classify(user_agent) == Crawler(name=None, category=UNKNOWN, is_bot=True)


def test_list_category_is_kept() -> None:
    assert classify(GOOGLEBOT).list_category == "Search bot"
    assert classify("curl/8.5.0").list_category == "Library"
    assert classify(CHROME).list_category is None


@pytest.mark.parametrize(
    ("user_agent", "domains"),
    [
        (GOOGLEBOT, ("googlebot.com", "google.com")),
        (GOOGLEBOT_SMARTPHONE, ("googlebot.com", "google.com")),
        ("AdsBot-Google (+http://www.google.com/adsbot.html)", ("googlebot.com", "google.com")),
        (BINGBOT, ("search.msn.com",)),
        (APPLEBOT, ("applebot.apple.com",)),
        (
            "Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)",
            ("yandex.ru", "yandex.net", "yandex.com"),
        ),
        (
            "Mozilla/5.0 (compatible; YandexImages/3.0; +http://yandex.com/bots)",
            ("yandex.ru", "yandex.net", "yandex.com"),
        ),
        (
            "Mozilla/5.0 (compatible; Baiduspider/2.0; +http://www.baidu.com/search/spider.html)",
            ("baidu.com", "baidu.jp"),
        ),
        (
            "Mozilla/5.0 (compatible; PetalBot;+https://webmaster.petalsearch.com/site/petalbot)",
            ("petalsearch.com",),
        ),
        (
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Amazonbot/0.1; "
            "+https://developer.amazon.com/support/amazonbot) Chrome/119.0.6045.214 Safari/537.36",
            ("crawl.amazonbot.amazon",),
        ),
    ],
)
def test_verifiable_crawlers_carry_their_domains(user_agent: str, domains: tuple) -> None:
    assert classify(user_agent).verify_domains == domains


@pytest.mark.parametrize(
    "user_agent",
    [
        "DuckDuckBot/1.1; (+http://duckduckgo.com/duckduckbot.html)",
        # Google's user-triggered fetchers come from googleusercontent.com: not verifiable.
        "FeedFetcher-Google; (+http://www.google.com/feedfetcher.html)",
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; "
        "+https://openai.com/gptbot)",
        # Claims to be like Googlebot, but the list knows it as another crawler.
        "Mozilla/5.0 (compatible; AhrefsBot/7.0; like Googlebot; +http://ahrefs.com/robot/)",
        HEADLESS_CHROME,
        CHROME,
    ],
)
def test_other_clients_are_not_verifiable(user_agent: str) -> None:
    assert classify(user_agent).verify_domains == ()


def test_every_category_is_known() -> None:
    for user_agent, _, _ in BOTS:
        assert classify(user_agent).category in user_agents.BOT_CATEGORIES
    assert BROWSER in user_agents.CATEGORIES


def test_our_tables_name_bots_the_packaged_list_knows() -> None:
    # Catches a rename in a device_detector upgrade, which would silently drop an override.
    bots_yml = (resources.files("device_detector") / "regexes" / "upstream" / "bots.yml").read_text(
        encoding="utf-8"
    )
    names = [*user_agents._NAME_CATEGORIES, *user_agents._VERIFY_DOMAINS]
    missing = [name for name in names if f"name: '{name}'" not in bots_yml]
    assert missing == []
    categories = [c for c in user_agents._LIST_CATEGORIES if f"category: '{c}'" not in bots_yml]
    assert categories == []


@pytest.mark.parametrize(
    "user_agent",
    [
        CHROME,
        CHROME_ANDROID,
        CHROME_MAC,
        CHROME.replace("124", "99"),
        CHROME.replace("Windows NT 10.0; Win64; x64", "X11; Linux x86_64"),
        CHROME.replace("Windows NT 10.0; Win64; x64", "X11; CrOS x86_64 14541.0.0"),
        EDGE,
        FIREFOX,
        FIREFOX_LINUX,
        FIREFOX_ANDROID,
        FIREFOX.replace("Windows NT 10.0; Win64; x64", "Macintosh; Intel Mac OS X 10.15"),
        SAFARI_MAC,
        SAFARI_IOS,
        SAFARI_IPAD,
    ],
)
def test_fast_path_agrees_with_the_list(user_agent: str) -> None:
    assert user_agents._PLAIN_BROWSER.fullmatch(user_agent)
    assert user_agents._classify_with_list(user_agent) == user_agents.BROWSER_CLIENT


@pytest.mark.parametrize(
    "user_agent",
    [
        GOOGLEBOT_SMARTPHONE,
        APPLEBOT,
        HEADLESS_CHROME,
        SAMSUNG,
        CHROME + " (compatible; SomeBot/1.0)",
        CHROME.replace("Chrome/", "HeadlessChrome/"),
        SAFARI_IOS + " Googlebot",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/१२४.0.0.0 Safari/537.36",
    ],
)
def test_fast_path_leaves_anything_else_to_the_list(user_agent: str) -> None:
    assert user_agents._PLAIN_BROWSER.fullmatch(user_agent) is None


def test_classifications_are_cached() -> None:
    user_agents.clear_cache()
    first = classify(GOOGLEBOT)
    hits = user_agents._classify_cached.cache_info().hits
    assert classify(GOOGLEBOT) is first
    assert user_agents._classify_cached.cache_info().hits == hits + 1
    assert user_agents._classify_cached.cache_info().maxsize == user_agents.CACHE_SIZE


def test_overlong_user_agents_are_cut_before_parsing() -> None:
    crawler = classify(GOOGLEBOT + " " + "x" * 10_000)
    assert crawler.name == "Googlebot"
    assert classify(CHROME + " " + "x" * 10_000).is_bot is False


def test_warm_up_leaves_the_cache_alone() -> None:
    user_agents.clear_cache()
    user_agents.warm_up()
    assert user_agents._classify_cached.cache_info().currsize == 0


# The bot and library lists alone answer as device_detector's full parse does (see
# user_agents._classify_with_list): checked on its own test corpus, every user agent the library
# list matches and a deterministic eighth of the rest.
CORPUS_FILES = ("bots.yml", "unknown.yml", "feed_reader.yml", "mediaplayer.yml",
                "mobile_apps.yml", "podcasting.yml", "desktop-1.yml", "smartphone-1.yml")
LIBRARIES = ("python-requests/2.31.0", "curl/8.5.0", "Go-http-client/1.1", "okhttp/4.12.0",
             "Wget/1.21.4", "axios/1.6.8", "Java/17.0.10", "aiohttp/3.9.5",
             CHROME + " python-requests/2.31.0")


# libyaml's loader (PyYAML's wheels carry it) reads the same data ~4x faster than the pure-Python
# one: ~0.8 s of CPU where safe_load took ~3.6 s.
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _corpus() -> list[str]:
    fixtures = resources.files("device_detector") / "tests" / "fixtures" / "upstream"
    agents = [entry["user_agent"] for name in CORPUS_FILES
              for entry in yaml.load((fixtures / name).read_text(), Loader=YAML_LOADER)
              if isinstance(entry, dict) and entry.get("user_agent")]
    libraries = [agent for agent in agents if Library(agent, None).parse().ua_data]
    return [*LIBRARIES, *libraries, *agents[::8]]


def _full_parse(user_agent: str) -> tuple[str, str | None]:
    detector = DeviceDetector(user_agent, skip_device_detection=True, check_cache=False).parse()
    bot = detector.all_details.get("bot")
    if bot:
        return "bot", bot.get("name") or None
    if detector.client_type() == AppType.Library:
        return "library", detector.client_name() or None
    return "browser", None


def test_the_bot_and_library_lists_answer_as_the_full_parse() -> None:
    agents = [agent for agent in _corpus() if not user_agents._AUTOMATION_RE.search(agent)]
    assert len(agents) > 400
    kinds = set()
    for agent in agents:
        crawler = user_agents._classify_with_list(agent)
        kind = ("library" if crawler.list_category == "Library" else
                "bot" if crawler.is_bot else "browser")
        kinds.add(kind)
        assert (kind, crawler.name) == _full_parse(agent), agent
    assert kinds == {"bot", "library", "browser"}
