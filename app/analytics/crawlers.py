"""Crawler activity from the crawl reports, by receive time."""
from typing import Any

from peewee import (
    SQL,
    fn,
)

from app.analytics.events import fetch, when
from app.analytics.numbers import timestamp
from app.analytics.period import Period
from app.storage.dialect import bytewise
from models import CrawlHit

UNKNOWN_CRAWLER = "(unknown)"


def crawler_activity(site_id: int, period: Period, limit: int,
                     category: str | None = None) -> dict[str, Any]:
    where = (CrawlHit.site_id == site_id) & period.covers(CrawlHit.received_at)
    if category is not None:
        where &= CrawlHit.category == category
    hits = fn.COUNT(CrawlHit.id)
    crawler = fn.COALESCE(CrawlHit.crawler, UNKNOWN_CRAWLER)
    crawlers = fetch(CrawlHit.select(crawler.alias("crawler"), CrawlHit.category,
                                      hits.alias("hits"),
                                      fn.SUM(when(CrawlHit.verified, 1)).alias("verified"),
                                      fn.SUM(when(CrawlHit.spoofed, 1)).alias("spoofed"),
                                      fn.MAX(CrawlHit.received_at).alias("last_seen"))
                      .where(where).group_by(crawler, CrawlHit.category)
                      .order_by(SQL("hits").desc(), bytewise(crawler),
                                bytewise(CrawlHit.category)).limit(limit))
    categories = fetch(CrawlHit.select(CrawlHit.category, hits.alias("hits")).where(where)
                        .group_by(CrawlHit.category)
                        .order_by(SQL("hits").desc(), bytewise(CrawlHit.category)))
    paths = fetch(CrawlHit.select(CrawlHit.path, hits.alias("hits"),
                                   fn.COUNT(CrawlHit.crawler.distinct()).alias("crawlers"))
                   .where(where).group_by(CrawlHit.path)
                   .order_by(SQL("hits").desc(), bytewise(CrawlHit.path)).limit(limit))
    return {
        "total_hits": sum(int(row["hits"]) for row in categories),
        "categories": [{"category": row["category"], "hits": int(row["hits"])}
                       for row in categories],
        "crawlers": [{"crawler": row["crawler"], "category": row["category"],
                      "hits": int(row["hits"]), "verified": int(row["verified"] or 0),
                      "spoofed": int(row["spoofed"] or 0),
                      "last_seen": timestamp(row["last_seen"])} for row in crawlers],
        "top_paths": [{"path": row["path"], "hits": int(row["hits"]),
                       "crawlers": int(row["crawlers"])} for row in paths],
        "estimated": False,
    }
