"""Device class, browser and OS (with major versions) from a User-Agent and its client hints.

The parser is ua-parser (the maintained uap-core regexes) on its Rust accelerator
(`ua-parser[regex]`): about 11 µs for a User-Agent not seen before. Only its browser and OS
matchers are built: the device matcher would add ~20 MiB per worker and 8 µs a parse, and
egis needs only the device *class*, which no uap-core field gives; it is read from the tokens
browsers write for that purpose (below). device_detector (10-12 ms a parse) stays for the bot
filter (app.crawlers). The matchers are compiled when this module is imported, in gunicorn's
master before the fork (preload_app), so the workers share them.

Rules:
- browser: uap-core's family with its mobile variants folded into the browser
  (`Mobile Safari` -> `Safari`, `Chrome Mobile`, `Chrome Mobile iOS`, `Chrome Mobile WebView`
  -> `Chrome`, `Firefox Mobile`, `Firefox iOS` -> `Firefox`, `Edge Mobile` -> `Edge`,
  `Opera Mobile` -> `Opera`); `Samsung Internet`, `Opera Mini` and the others as uap-core names
  them; `Other` (unknown) is null. Version: the major, digits only.
- os: `Mac OS X` -> `macOS`, Linux distributions -> `Linux`, otherwise uap-core's family.
  A `Sec-CH-UA-Platform` hint that names a known platform wins; its version is then the
  User-Agent's only when both name the same platform. Browsers freeze parts of the User-Agent
  (macOS reads 10.15, Chrome on Android says Android 10, Windows 11 says Windows NT 10.0):
  the stored major is what the User-Agent says.
- device: `Sec-CH-UA-Mobile: ?1` is Mobile; an iPad, a `Tablet` token, a Kindle, or Android
  without a `Mobile` token (or with `Sec-CH-UA-Mobile: ?0`) is Tablet; `Sec-CH-UA-Mobile: ?0`
  otherwise is Desktop; a `Mobi` token (`Mobile`), an iPhone or an iPod is Mobile; anything
  else is Desktop. iPadOS Safari asks for desktop sites with a Mac User-Agent and sends no
  client hints: such an iPad is counted as a Mac (Desktop, macOS), which no User-Agent parser
  can tell apart.

Results are cached per worker (functools.lru_cache, bounded); only the first MAX_PARSED
characters of a User-Agent are read, which keeps the cache's memory bounded too.
"""
from dataclasses import dataclass
from functools import lru_cache

import ua_parser
from ua_parser import Domain
from ua_parser.regex import Resolver

from app.context.values import storable

# Real User-Agents are 100-400 characters; a longer one is read up to here.
MAX_PARSED = 512
# Distinct (User-Agent, hints) results kept per worker: at most ~1.5 MiB at MAX_PARSED.
CACHE_SIZE = 2048
MAX_NAME = 64  # the browser and os columns
MAX_VERSION = 16  # the *_version columns

DESKTOP, MOBILE, TABLET = "Desktop", "Mobile", "Tablet"

BROWSER_FOLDS = {
    "Mobile Safari": "Safari",
    "Mobile Safari UI/WKWebView": "Safari",
    "Chrome Mobile": "Chrome",
    "Chrome Mobile iOS": "Chrome",
    "Chrome Mobile WebView": "Chrome",
    "Firefox Mobile": "Firefox",
    "Firefox iOS": "Firefox",
    "Edge Mobile": "Edge",
    "Opera Mobile": "Opera",
}
OS_FOLDS = {
    "Mac OS X": "macOS",
    **dict.fromkeys(("Ubuntu", "Debian", "Fedora", "Linux Mint", "Mint", "Arch Linux",
                     "openSUSE", "SUSE", "Red Hat", "Gentoo", "Kubuntu", "Slackware",
                     "Mandriva", "CentOS"), "Linux"),
}
# Sec-CH-UA-Platform's values (the quotes removed) and the os they name; others are ignored.
PLATFORM_HINTS = {"Windows": "Windows", "macOS": "macOS", "Linux": "Linux",
                  "Android": "Android", "Chrome OS": "Chrome OS", "Chromium OS": "Chrome OS",
                  "iOS": "iOS"}
UNKNOWN = "Other"  # uap-core's family when nothing matched



def _browser_and_os_resolver() -> Resolver:
    """uap-core's browser and OS matchers compiled in Rust (no device matchers: see above);
    the Python-side lists they are built from are let go."""
    browsers, operating_systems, _devices = ua_parser.load_lazy_builtins()
    return Resolver((browsers, operating_systems, []))


_resolver = _browser_and_os_resolver()


@dataclass(frozen=True, slots=True)
class Client:
    device: str | None = None
    browser: str | None = None
    browser_version: str | None = None
    os: str | None = None
    os_version: str | None = None


def describe(user_agent: str | None, mobile_hint: str | None = None,
             platform_hint: str | None = None) -> Client:
    """The device class, browser and OS of a User-Agent and its `Sec-CH-UA-Mobile` and
    `Sec-CH-UA-Platform` headers (as sent, or None)."""
    if not user_agent:
        return Client()
    text = user_agent[:MAX_PARSED]
    if not text.isascii():  # the parser needs UTF-8: a lone surrogate becomes "?"
        text = text.encode("utf-8", "replace").decode("utf-8")
    return _describe(text, mobile_hint, platform_hint)


@lru_cache(maxsize=CACHE_SIZE)
def _describe(user_agent: str, mobile_hint: str | None, platform_hint: str | None) -> Client:
    parsed = _resolver(user_agent, Domain.USER_AGENT | Domain.OS)
    browser = browser_version = os = os_version = None
    if parsed.user_agent is not None and parsed.user_agent.family != UNKNOWN:
        family = parsed.user_agent.family
        browser = storable(BROWSER_FOLDS.get(family, family), MAX_NAME)
        browser_version = _major(parsed.user_agent.major)
    if parsed.os is not None and parsed.os.family != UNKNOWN:
        family = parsed.os.family
        os = storable(OS_FOLDS.get(family, family), MAX_NAME)
        os_version = _major(parsed.os.major)
    platform = PLATFORM_HINTS.get((platform_hint or "").strip().strip('"'))
    if platform is not None and platform != os:
        os, os_version = platform, None
    mobile = {"?1": True, "?0": False}.get((mobile_hint or "").strip())
    return Client(device_class(user_agent, mobile, os), browser, browser_version, os,
                  os_version)


def device_class(user_agent: str, mobile: bool | None, os: str | None) -> str:
    """Desktop, Mobile or Tablet (the rules in the module docstring); `mobile` is the
    Sec-CH-UA-Mobile hint (None without one), `os` the os already derived."""
    if mobile:
        return MOBILE
    android = os == "Android"
    if ("iPad" in user_agent or "Kindle" in user_agent or "Silk/" in user_agent
            or ("Tablet" in user_agent and "Tablet PC" not in user_agent)
            or (android and (mobile is False or "Mobile" not in user_agent))):
        return TABLET
    if mobile is False:
        return DESKTOP
    if "Mobi" in user_agent or "iPhone" in user_agent or "iPod" in user_agent:
        return MOBILE
    return DESKTOP


def _major(version: str | None) -> str | None:
    if version and version.isascii() and version.isdigit():
        return storable(version, MAX_VERSION)
    return None
