"""Crawler reports (POST /api/crawl/report): who fetches the site's documents.

A site's edge reports bot-like document fetches. An ordinary browser navigation (Sec-Fetch-Mode
navigate, Sec-Fetch-Dest document, a user agent that is no known bot) is ignored; anything else
is recorded with the crawler's name and category from app.crawlers.user_agents. A report from a
non-bot user agent that is not such a navigation is recorded as category `unknown` with no
crawler name: the edge found it bot-like, and its user agent claims a browser, which says
nothing about who it is.

The reported IP address only names the network (app.crawlers.networks) and, when
EGIS_VERIFY_CRAWLERS is on, checks a crawler's claim by reverse DNS plus forward confirmation
(app.crawlers.verify). It is never stored, logged or echoed: nothing in this module logs.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flask import Flask

from app.crawlers import user_agents
from app.crawlers.networks import network_of
from models import CrawlHit
from models.site import utcnow

if TYPE_CHECKING:
    from app.crawlers.verify import CrawlerVerifier

# Column widths of models.crawl_hit.
MAX_STORED_USER_AGENT = 512
MAX_STORED_CRAWLER = 128
_QUERY_OR_FRAGMENT = re.compile(r"[?#]")
_VERIFIER = "egis_crawler_verifier"


@dataclass(frozen=True)
class CrawlReport:
    path: str
    user_agent: str
    host: str | None = None
    ip: str | None = None
    sec_fetch_dest: str | None = None  # lower case; None when empty or not sent
    sec_fetch_mode: str | None = None


@dataclass(frozen=True)
class Verification:
    verified: bool | None  # None: not checked, or the check could not run
    spoofed: bool  # claims a verifiable crawler, and the check failed


NOT_CHECKED = Verification(verified=None, spoofed=False)


def path_only(path: str) -> str:
    """The path without query string and fragment; "/" when nothing is left."""
    return _QUERY_OR_FRAGMENT.split(path, maxsplit=1)[0] or "/"


def fetch_metadata(value: str | None) -> str | None:
    """A Sec-Fetch-* value as compared and stored: lower case, None when empty."""
    value = (value or "").strip().lower()
    return value or None


def is_browser_navigation(report: CrawlReport, crawler: user_agents.Crawler) -> bool:
    return (report.sec_fetch_mode == "navigate" and report.sec_fetch_dest == "document"
            and not crawler.is_bot)


def verifier_for(app: Flask) -> CrawlerVerifier | None:
    """The app's verifier when EGIS_VERIFY_CRAWLERS is on, built on first use."""
    if not app.config["VERIFY_CRAWLERS"]:
        return None
    verifier = app.extensions.get(_VERIFIER)
    if verifier is None:
        # Imported only when on: dnspython is 56 modules, 2.3 MiB in every worker otherwise.
        from app.crawlers.verify import verifier_from_setting

        built = verifier_from_setting(app.config["DNS_SERVER"], float(app.config["DNS_TIMEOUT"]))
        verifier = app.extensions.setdefault(_VERIFIER, built)
    return verifier


def verify(report: CrawlReport, crawler: user_agents.Crawler,
           verifier: CrawlerVerifier | None) -> Verification:
    if verifier is None or report.ip is None or not crawler.verify_domains:
        return NOT_CHECKED
    verified = verifier.verify(report.ip, crawler.verify_domains)
    return Verification(verified=verified, spoofed=verified is False)


def record(site_id: int, report: CrawlReport, verifier: CrawlerVerifier | None) -> bool:
    """Store the report; False when it was an ordinary browser navigation (nothing stored)."""
    crawler = user_agents.classify(report.user_agent)
    if is_browser_navigation(report, crawler):
        return False
    check = verify(report, crawler, verifier)
    CrawlHit.insert(
        site_id=site_id,
        path=path_only(report.path),
        host=report.host,
        user_agent=report.user_agent[:MAX_STORED_USER_AGENT],
        crawler=crawler.name[:MAX_STORED_CRAWLER] if crawler.name else None,
        category=crawler.category if crawler.is_bot else user_agents.UNKNOWN,
        network=network_of(report.ip) if report.ip is not None else None,
        verified=check.verified,
        spoofed=check.spoofed,
        sec_fetch_dest=report.sec_fetch_dest,
        sec_fetch_mode=report.sec_fetch_mode,
        received_at=utcnow(),
    ).execute()
    return True


__all__ = ["CrawlReport", "Verification", "fetch_metadata", "is_browser_navigation",
           "path_only", "record", "verifier_for", "verify"]
