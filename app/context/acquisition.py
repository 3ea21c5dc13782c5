"""Where a page view came from, and the page an event is on: from pageUrl and referrer only.

Every event (browser or backend) gets `path` (pageUrl's path, as written, without query and
fragment; `/` for a bare origin) and `hostname` (pageUrl's host, lower case, without `www.`).
Page views also get the acquisition values below; a visit's are those of its first page view
(the read side picks them), so they are stored per page view.

- utm_source, utm_medium, utm_campaign, utm_content, utm_term: from pageUrl's query, as given
  (the first non-empty value of each). Click ids (gclid, gbraid, wbraid, msclkid) are never
  stored: only their presence counts, below. pageUrl itself is stored as sent.
- referrer_url: the referrer's scheme, host, port and path (no query, fragment or user info);
  null without a referrer, for a referrer that is no URL with a host, and for the site itself
  (its domain or a subdomain): moving between one's own pages is not where a visit came from.
- source: utm_source if present; else the known name of the referrer's host
  (app/context/data/referrers.csv: Google, Bing, Facebook, X, ChatGPT, ...); else the referrer's
  host without `www.`; else `(direct)` (no referrer, or the site itself).
- kind: that of utm_source if the table knows it (`google`, `fb`, `chatgpt.com`), else that
  of the referrer's host: search, social, ai, email, or none.
- channel: the first of these rules that holds:
  1. Direct: no utm_source, no utm_medium, no click id, and no referrer but the site itself.
  2. Paid Search: a search-ads click id (PAID_SEARCH_CLICK_IDS); or a paid utm_medium
     (PAID_MEDIUMS, or starting with `paid`) and kind search.
  3. Paid Social: a paid utm_medium and kind social.
  4. Other: any other paid utm_medium (paid, but neither search nor social).
  5. Email: utm_medium or utm_source is an e-mail word (EMAIL_WORDS), or kind email.
  6. AI Assistants: kind ai.
  7. Organic Search: kind search, or utm_medium `organic`.
  8. Organic Social: kind social, or a social utm_medium (SOCIAL_MEDIUMS).
  9. Referral: a referral utm_medium (REFERRAL_MEDIUMS), or a referrer from another site
     without any utm_medium.
  10. Other: everything else (e.g. an unknown utm_source without referrer, or a medium such
      as `banner`).
  Mediums and e-mail words are compared lower case, without surrounding spaces. The order
  follows GA4's default channel group (paid before organic, e-mail before the referrer's kind),
  folded into the nine channels of visit:channel (app.analytics.vocabulary).
"""
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import parse_qsl, urlsplit

from app.context import referrers
from app.context.values import storable

DIRECT_SOURCE = "(direct)"
DIRECT, ORGANIC_SEARCH, PAID_SEARCH = "Direct", "Organic Search", "Paid Search"
ORGANIC_SOCIAL, PAID_SOCIAL, EMAIL = "Organic Social", "Paid Social", "Email"
AI_ASSISTANTS, REFERRAL, OTHER = "AI Assistants", "Referral", "Other"
CHANNELS = (DIRECT, ORGANIC_SEARCH, PAID_SEARCH, ORGANIC_SOCIAL, PAID_SOCIAL, EMAIL,
            AI_ASSISTANTS, REFERRAL, OTHER)

UTM_NAMES = ("utm_source", "utm_medium", "utm_campaign", "utm_content", "utm_term")
COLUMNS = ("source", "channel", "referrer_url", *UTM_NAMES)
PAID_SEARCH_CLICK_IDS = frozenset({"gclid", "gbraid", "wbraid", "msclkid"})
PAID_MEDIUMS = frozenset({"cpc", "ppc", "cpm", "cpv", "cpa", "retargeting"})
EMAIL_WORDS = frozenset({"email", "e-mail", "e_mail", "e mail", "newsletter"})
SOCIAL_MEDIUMS = frozenset({"social", "social-network", "social-media", "sm", "social network",
                            "social media"})
REFERRAL_MEDIUMS = frozenset({"referral", "app", "link"})
ORGANIC_MEDIUM = "organic"

MAX_HOSTNAME = 253  # the longest DNS name
MAX_VALUE = 2048  # a utm value or a path: no longer than pageUrl may be
# Per-worker caches, bounded: pageUrl and referrer are at most 2,048 characters each, so even
# hostile input keeps them under ~2 MiB (page), ~4 MiB (acquisition) and ~2 MiB (referrer).
PAGE_CACHE_SIZE = 1024
ACQUISITION_CACHE_SIZE = 1024
REFERRER_CACHE_SIZE = 1024
# A query without any of these is not parsed: it has no UTM value and no click id.
CAMPAIGN_MARKERS = ("utm_", *sorted(PAID_SEARCH_CLICK_IDS))


@dataclass(frozen=True, slots=True)
class Acquisition:
    source: str
    channel: str
    referrer_url: str | None = None
    utm_source: str | None = None
    utm_medium: str | None = None
    utm_campaign: str | None = None
    utm_content: str | None = None
    utm_term: str | None = None

    def columns(self) -> dict[str, str | None]:
        return {"source": self.source, "channel": self.channel,
                "referrer_url": self.referrer_url, "utm_source": self.utm_source,
                "utm_medium": self.utm_medium, "utm_campaign": self.utm_campaign,
                "utm_content": self.utm_content, "utm_term": self.utm_term}


NOT_A_PAGE_VIEW: dict[str, str | None] = dict.fromkeys(COLUMNS)


@dataclass(frozen=True, slots=True)
class _Referrer:
    url: str | None  # referrer_url; None for none, no URL, or the site itself
    host: str | None  # without www.
    known: referrers.Referrer | None


NO_REFERRER = _Referrer(None, None, None)


def bare_host(host: str | None) -> str | None:
    """A URL's host (already lower case) without a trailing dot and a leading `www.`."""
    if not host:
        return None
    return storable(host.rstrip(".").removeprefix("www."), MAX_HOSTNAME)


@lru_cache(maxsize=PAGE_CACHE_SIZE)
def page_location(page_url: str | None) -> tuple[str | None, str | None]:
    """(path, hostname) of a page URL; a bare path (`/pricing`) has a path and no host."""
    if not page_url:
        return None, None
    try:
        parts = urlsplit(page_url)
        host = parts.hostname
    except ValueError:  # e.g. an unclosed IPv6 bracket
        return None, None
    if parts.netloc:
        return storable(parts.path or "/", MAX_VALUE), bare_host(host)
    if page_url.startswith("/"):
        return storable(parts.path, MAX_VALUE), None
    return None, None


@lru_cache(maxsize=ACQUISITION_CACHE_SIZE)
def acquisition(page_url: str | None, referrer: str | None, site_domain: str) -> Acquisition:
    """A page view's source, channel, referrer_url and UTM values (rules above); cached per
    worker, as page views of one landing page from one referrer repeat."""
    utm, clicked = _campaign(page_url)
    came_from = _referrer(referrer, site_domain) if referrer else NO_REFERRER
    utm_source, utm_medium = utm["utm_source"], utm["utm_medium"]
    if utm_source is not None:
        source = utm_source
    elif came_from.host is not None:
        source = came_from.known.name if came_from.known else came_from.host
    else:
        source = DIRECT_SOURCE
    known = (referrers.by_source(utm_source) if utm_source is not None else None) or (
        came_from.known)
    channel = _channel(utm_source, utm_medium, clicked, came_from.host is not None,
                       known.kind if known else "")
    return Acquisition(source, channel, came_from.url, **utm)


def _channel(utm_source: str | None, utm_medium: str | None, clicked: bool,
             from_elsewhere: bool, kind: str) -> str:
    """The channel rules of the module docstring, in their order."""
    medium = utm_medium.strip().lower() if utm_medium is not None else None
    if utm_source is None and medium is None and not clicked and not from_elsewhere:
        return DIRECT
    paid = medium is not None and (medium in PAID_MEDIUMS or medium.startswith("paid"))
    if clicked or (paid and kind == "search"):
        return PAID_SEARCH
    if paid:
        return PAID_SOCIAL if kind == "social" else OTHER
    if (medium in EMAIL_WORDS or kind == "email"
            or (utm_source is not None and utm_source.strip().lower() in EMAIL_WORDS)):
        return EMAIL
    if kind == "ai":
        return AI_ASSISTANTS
    if kind == "search" or medium == ORGANIC_MEDIUM:
        return ORGANIC_SEARCH
    if kind == "social" or medium in SOCIAL_MEDIUMS:
        return ORGANIC_SOCIAL
    if medium in REFERRAL_MEDIUMS or (from_elsewhere and medium is None):
        return REFERRAL
    return OTHER


def _campaign(page_url: str | None) -> tuple[dict[str, str | None], bool]:
    """The UTM values of a page URL's query, and whether it has a search-ads click id."""
    utm: dict[str, str | None] = dict.fromkeys(UTM_NAMES)
    if not page_url or "?" not in page_url:
        return utm, False
    clicked = False
    query = page_url.partition("?")[2].partition("#")[0]
    if not any(marker in query for marker in CAMPAIGN_MARKERS):
        return utm, False
    for name, value in parse_qsl(query):
        if name in PAID_SEARCH_CLICK_IDS:
            clicked = True
        elif name in utm and utm[name] is None:
            utm[name] = storable(value, MAX_VALUE)
    return utm, clicked


@lru_cache(maxsize=REFERRER_CACHE_SIZE)
def _referrer(referrer: str, site_domain: str) -> _Referrer:
    try:
        parts = urlsplit(referrer)
        host = bare_host(parts.hostname)
        port = parts.port
    except ValueError:  # an unclosed IPv6 bracket, a port out of range
        return NO_REFERRER
    if host is None:
        return NO_REFERRER
    site = site_domain.lower().removeprefix("www.")
    if host == site or host.endswith("." + site):
        return NO_REFERRER
    netloc = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    if port is not None:
        netloc = f"{netloc}:{port}"
    url = storable(f"{parts.scheme}://{netloc}{parts.path}", MAX_VALUE)
    return _Referrer(url, host, referrers.by_host(host))
