"""Monthly quotas: how much a site has used, read cheaply.

Usage lives in sharded counter rows (models.usage); each worker process adds to its own shard in
the same statement that stores the events, so there is no hot row. Reading the month's total is a
SUM over a handful of rows, and each worker caches it for USAGE_CACHE_SECONDS: a site may overshoot
its quota by what arrives within that window, the price of not reading the total per request.
"""
import os
import threading
import time
import zlib
from dataclasses import dataclass
from datetime import datetime

from peewee import fn

from models import Site, Usage
from models.site import utcnow

SHARDS = 16


def period_of(moment: datetime) -> str:
    return moment.strftime("%Y-%m")


def shard() -> int:
    """This process's counter row: workers do not contend with each other."""
    return os.getpid() % SHARDS


def month_usage(site_id: int, period: str) -> int:
    total = (Usage.select(fn.COALESCE(fn.SUM(Usage.events), 0))
             .where(Usage.site_id == site_id, Usage.period == period).scalar())
    return int(total or 0)


class UsageCache:
    """Per-process, short-lived cache of month usage per site."""

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._entries: dict[tuple[int, str], tuple[float, int]] = {}
        self._lock = threading.Lock()

    def used(self, site_id: int, period: str) -> int:
        now = time.monotonic()
        entry = self._entries.get((site_id, period))
        if entry is not None and entry[0] > now:
            return entry[1]
        used = month_usage(site_id, period)
        with self._lock:
            self._entries[(site_id, period)] = (now + self.ttl, used)
        return used

    def add(self, site_id: int, period: str, count: int) -> None:
        """Count what this worker just stored, so its own view does not lag behind it."""
        with self._lock:
            entry = self._entries.get((site_id, period))
            if entry is not None:
                self._entries[(site_id, period)] = (entry[0], entry[1] + count)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


@dataclass(frozen=True)
class QuotaStatus:
    period: str
    limit: int
    used: int

    @property
    def remaining(self) -> int:
        return max(self.limit - self.used, 0)

    @property
    def sampling(self) -> bool:
        return self.used >= self.limit


def status(site: Site, cache: UsageCache, now: datetime | None = None) -> QuotaStatus:
    period = period_of(now or utcnow())
    return QuotaStatus(period=period, limit=site.quota, used=cache.used(site.id, period))


def keeps_session(session_key: str, rate: float) -> bool:
    """Session-consistent sampling: every worker keeps or drops the same sessions.

    CRC-32 of the session id, scaled to [0, 1), against the rate: deterministic across processes
    (unlike hash()), cheap, and uniform enough for sampling.
    """
    return zlib.crc32(session_key.encode("utf-8", "surrogatepass")) / 4_294_967_296 < rate
