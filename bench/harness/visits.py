"""Realistic visits for the analytics benchmarks: what bench.harness.seed stores.

A visit is one visitor's session: a browser profile (country, language, device, browser and OS with
versions, screen class: the per-request visit context of docs/ARCHITECTURE.md, on every event), an
entry page view that carries where the visit came from (source, channel, referrer, UTM campaign,
click ids), then more page views, each followed by what the tracker sends while the page is open
(web vitals, heartbeats every 15 s, scroll depths, clicks, form submits, errors, custom events with
properties, goals).

Rows come out in three parts, so a writer renders the parts that many events share once:
`(event, page, visit)`, the columns of EVENT_PART, PAGE_PART and VISIT_PART. A page's part is
one tuple for its page view (with source, channel, referrer_url, utm_*) and one for its other
events (those five columns null), as the column contract says.
"""
import bisect
import itertools
import random
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import orjson

EVENT_PART = ("type", "name", "properties", "occurred_at", "received_at")
PAGE_PART = ("page_url", "referrer", "user_id", "path", "hostname", "source", "channel",
             "referrer_url", "utm_source", "utm_medium", "utm_campaign", "utm_content",
             "utm_term")
VISIT_PART = ("site_id", "session_id", "anonymous_id", "weight", "country", "device", "browser",
              "browser_version", "os", "os_version", "language", "screen")
EVENT_COLUMNS = EVENT_PART + PAGE_PART + VISIT_PART
Row = tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]

GOALS = ["signup", "checkout", "newsletter", "demo-request"]
ERRORS = [f"TypeError: cannot read properties of undefined (reading 'x{n}')" for n in range(40)]
VITAL_RANGES = {"lcp": (800, 6000), "inp": (40, 800), "cls": (0.0, 0.4), "fcp": (500, 4000),
                "ttfb": (50, 2000)}
COUNTRIES = {"US": 25, "DE": 12, "GB": 8, "FR": 6, "IN": 6, "CA": 4, "NL": 3, "BR": 3, "JP": 3,
             "ES": 3, "IT": 3, "PL": 2, "SE": 2, "AU": 2, "CH": 2, "AT": 1.5, "MX": 1.5,
             "KR": 1, "CN": 1, "TR": 1, "UA": 1, "CZ": 1, "DK": 1, "NO": 1, "FI": 1, "BE": 1,
             "PT": 1, "IE": 1, "SG": 1, "ZA": 1, "AR": 0.5, "NZ": 0.5, "IL": 0.5, None: 2}
LANGUAGES = {"DE": "de", "AT": "de", "CH": "de", "FR": "fr", "BE": "fr", "ES": "es", "MX": "es",
             "AR": "es", "IT": "it", "NL": "nl", "PL": "pl", "BR": "pt", "PT": "pt", "JP": "ja",
             "KR": "ko", "CN": "zh", "TR": "tr", "UA": "uk", "CZ": "cs", "DK": "da", "NO": "nb",
             "FI": "fi", "SE": "sv", "IL": "he"}
DEVICES = {"Desktop": 55, "Mobile": 40, "Tablet": 5}
# (browser, its major versions, OS, its major versions), weighted, per device.
BROWSERS = {
    "Desktop": {("Chrome", ("129", "130", "131"), "Windows", ("10", "11")): 38,
                ("Chrome", ("130", "131"), "macOS", ("14", "15")): 14,
                ("Chrome", ("131",), "Linux", (None,)): 4,
                ("Chrome", ("131",), "Chrome OS", ("131",)): 2,
                ("Edge", ("130", "131"), "Windows", ("10", "11")): 12,
                ("Safari", ("17", "18"), "macOS", ("14", "15")): 15,
                ("Firefox", ("131", "132", "133"), "Windows", ("10", "11")): 6,
                ("Firefox", ("132", "133"), "Linux", (None,)): 4,
                ("Opera", ("114",), "Windows", ("11",)): 2},
    "Mobile": {("Chrome", ("129", "130", "131"), "Android", ("12", "13", "14", "15")): 42,
               ("Safari", ("16", "17", "18"), "iOS", ("16", "17", "18")): 45,
               ("Samsung Internet", ("26", "27"), "Android", ("13", "14")): 8,
               ("Firefox", ("132",), "Android", ("14",)): 3,
               ("Opera", ("85",), "Android", ("13",)): 2},
    "Tablet": {("Safari", ("17", "18"), "iOS", ("17", "18")): 60,
               ("Chrome", ("130", "131"), "Android", ("13", "14")): 40},
}
SCREENS = {"Desktop": {"large": 45, "xlarge": 50, "medium": 5}, "Mobile": {"small": 97,
           "medium": 3}, "Tablet": {"medium": 80, "large": 20}}
# (referrer URL, source, channel), weighted: where entry page views come from without UTM.
REFERRALS = {(None, "(direct)", "Direct"): 33,
             ("https://www.google.com/", "Google", "Organic Search"): 30,
             ("https://www.bing.com/", "Bing", "Organic Search"): 3,
             ("https://duckduckgo.com/", "DuckDuckGo", "Organic Search"): 2,
             ("https://www.ecosia.org/", "ecosia.org", "Organic Search"): 0.5,
             ("https://l.facebook.com/", "Facebook", "Organic Social"): 2,
             ("https://t.co/", "X", "Organic Social"): 2,
             ("https://www.linkedin.com/", "LinkedIn", "Organic Social"): 1.5,
             ("https://www.reddit.com/r/webdev/", "Reddit", "Organic Social"): 2,
             ("https://news.ycombinator.com/", "Hacker News", "Referral"): 2,
             ("https://github.com/", "GitHub", "Referral"): 2,
             ("https://chatgpt.com/", "ChatGPT", "AI Assistants"): 2.5,
             ("https://www.perplexity.ai/", "Perplexity", "AI Assistants"): 1,
             ("https://claude.ai/", "claude.ai", "AI Assistants"): 0.5}
# (utm_source, utm_medium, channel), weighted, and the campaigns they run.
UTMS = {("newsletter", "email", "Email"): 35, ("google", "cpc", "Paid Search"): 20,
        ("facebook", "paid_social", "Paid Social"): 12, ("linkedin", "paid_social",
        "Paid Social"): 6, ("twitter", "social", "Organic Social"): 10,
        ("partner", "referral", "Referral"): 10, ("podcast", "audio", "Other"): 7}
CAMPAIGNS = ["spring-sale", "black-friday", "launch-2026", "webinar-oct", "webinar-nov",
             "docs-relaunch", "pricing-test-a", "pricing-test-b", "retarget-q4", "onboarding",
             "weekly-digest", "product-hunt", "partner-week", "holiday-2026", "brand"]
TOP_PAGES = ["/", "/pricing", "/blog", "/about", "/signup", "/features", "/changelog",
             "/contact", "/login"]
CUSTOM = {"video_play": lambda rng: {"video": rng.choice(["intro", "tour", "pricing-explainer",
                                                           "webinar"]),
                                     "autoplay": rng.choice(["true", "false"])},
          "search": lambda rng: {"query_length": rng.choice(["short", "medium", "long"]),
                                 "results": rng.randrange(0, 50)},
          "share": lambda rng: {"network": rng.choice(["x", "linkedin", "email", "copy"])},
          "download": lambda rng: {"file": rng.choice(["whitepaper.pdf", "pricing.pdf",
                                                        "egis-0.9.tar.gz", "report-2026.pdf"])},
          "outbound_click": lambda rng: {"host": rng.choice(["github.com", "docs.python.org",
                                                             "pypi.org"])}}
# Visits per hour of the day (UTC), a workday curve with a European and an American peak.
HOURS = [2, 1.5, 1.2, 1, 1, 1.2, 2, 3.5, 5, 6, 6.5, 6.5, 6, 6.5, 7.5, 8, 7.5, 6.5, 5.5, 5, 4.5,
         4, 3.5, 2.5]


class Choice:
    """A weighted choice that costs one random number and a bisect."""

    def __init__(self, weighted: dict[Any, float]) -> None:
        self.values = list(weighted)
        self.cumulative = list(itertools.accumulate(weighted.values()))

    def __call__(self, rng: random.Random) -> Any:
        return self.values[bisect.bisect(self.cumulative, rng.random() * self.cumulative[-1])]


COUNTRY, DEVICE, REFERRAL, UTM, HOUR = (Choice(COUNTRIES), Choice(DEVICES), Choice(REFERRALS),
                                        Choice(UTMS), Choice(dict(enumerate(HOURS))))
BROWSER = {device: Choice(weighted) for device, weighted in BROWSERS.items()}
SCREEN = {device: Choice(weighted) for device, weighted in SCREENS.items()}


def profile(seed: int) -> tuple[Any, ...]:
    """A visitor's browser, the same on each of its visits: country, device, browser, browser
    version, OS, OS version, language, screen class."""
    rng = random.Random(seed)
    country, device = COUNTRY(rng), DEVICE(rng)
    browser, versions, os, os_versions = BROWSER[device](rng)
    language = LANGUAGES.get(country, "en") if rng.random() < 0.85 else "en"
    return (country, device, browser, rng.choice(versions), os, rng.choice(os_versions),
            None if country is None and rng.random() < 0.5 else language, SCREEN[device](rng))


def page_path(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.4:
        return f"/docs/{min(int(rng.paretovariate(1.2)), 500)}"
    if roll < 0.65:
        return f"/blog/post-{min(int(rng.paretovariate(1.1)), 300)}"
    return rng.choice(TOP_PAGES)


def landing(rng: random.Random, domain: str) -> tuple[str, str | None, tuple[Any, ...]]:
    """The entry page view's URL, referrer and (source, channel, referrer_url, utm_source,
    utm_medium, utm_campaign, utm_content, utm_term)."""
    path = "/" if rng.random() < 0.2 else page_path(rng)
    url = f"https://{domain}{path}"
    roll = rng.random()
    if roll < 0.12:
        utm_source, utm_medium, channel = UTM(rng)
        campaign = rng.choice(CAMPAIGNS)
        content = rng.choice(["banner", "text", "hero", None, None])
        term = rng.choice(["web analytics", "plausible alternative", None]) if (
            utm_medium == "cpc") else None
        query = f"utm_source={utm_source}&utm_medium={utm_medium}&utm_campaign={campaign}"
        query += f"&utm_content={content}" if content else ""
        query += f"&utm_term={term.replace(' ', '+')}" if term else ""
        referrer = "https://www.google.com/" if utm_medium == "cpc" else None
        return (f"{url}?{query}", referrer, (utm_source, channel, referrer, utm_source,
                                            utm_medium, campaign, content, term))
    if roll < 0.15:
        return (f"{url}?gclid=Cj0K{rng.getrandbits(40):x}", "https://www.google.com/",
                ("Google", "Paid Search", "https://www.google.com/", None, None, None, None,
                 None))
    referrer, source, channel = REFERRAL(rng)
    if source == "(direct)" and rng.random() < 0.25:  # a long tail of referring sites
        host = f"blog{min(int(rng.paretovariate(1.0)), 400)}.example.org"
        referrer, source, channel = f"https://{host}/posts/{rng.randrange(50)}", host, "Referral"
    return url, referrer, (source, channel, referrer, None, None, None, None, None)


def session_events(rng: random.Random, site_id: int, domain: str, start: datetime,
                   session: str, visitor: int, weight: float) -> Iterator[Row]:
    """One visit's events as (event, page, visit) parts, in time order."""
    visit = (site_id, session, f"a{visitor}", weight, *profile(visitor))
    user = f"u{rng.randrange(50000)}" if rng.random() < 0.08 else None
    views = 1 if rng.random() < 0.55 else 2 + min(int(rng.expovariate(0.45)), 18)
    url, referrer, context = landing(rng, domain)
    at = start
    for view in range(views):
        if view:
            referrer, url = url, f"https://{domain}{page_path(rng)}"
            context = ("(direct)", "Direct", urlsplit(referrer)._replace(
                query="", fragment="").geturl(), None, None, None, None, None)
        path = urlsplit(url).path
        identified = user if view else None
        other = (url, referrer or "", identified, path, domain, None, None, None, None, None,
                 None, None, None)
        seen = (url, referrer or "", identified, path, domain, *context)

        def event(kind: str, at: datetime, name: str | None = None, properties: Any = None,
                  page: tuple[Any, ...] = other) -> Row:
            json = None if properties is None else orjson.dumps(properties).decode()
            return (kind, name, json, at, at + timedelta(seconds=1)), page, visit

        yield event("pageview", at, page=seen)
        if rng.random() < 0.4:  # the tracker's web vitals, all five in one event
            yield event("performance", at, properties={
                metric: round(rng.uniform(low, high), 3)
                for metric, (low, high) in VITAL_RANGES.items()})
        # Seconds on the page: median ~25, ~7 on a single-page visit's only page.
        dwell = rng.lognormvariate(3.2 if views > 1 else 2.0, 1.1)
        for _ in range(min(int(dwell // 15), 40)):
            at += timedelta(seconds=15)
            yield event("heartbeat", at)
        for depth in (25, 50, 75, 100)[:min(int(dwell // 10), rng.randrange(5))]:
            yield event("scroll", at, properties={"depth": depth})
        for _ in range(rng.randrange(3) if dwell > 10 and rng.random() < 0.6 else 0):
            yield event("click", at, properties={"element": rng.choice(["a", "button"])})
        if path == "/signup" and rng.random() < 0.3:
            yield event("form_submit", at, properties={"form": "signup",
                                                       "fields": ["name", "plan"]})
            if rng.random() < 0.6:
                yield event("goal", at, "signup", {"plan": rng.choice(["free", "pro", "team"])})
        if path == "/pricing" and rng.random() < 0.06:
            yield event("goal", at, "checkout", {"plan": rng.choice(["pro", "team"])})
        if rng.random() < 0.02:
            yield event("goal", at, rng.choice(["newsletter", "demo-request"]))
        if rng.random() < 0.08:
            name = rng.choice(list(CUSTOM))
            yield event("custom", at, name, CUSTOM[name](rng))
        if rng.random() < 0.01:
            yield event("error", at, properties={"message": rng.choice(ERRORS), "stack": "at x"})
        at += timedelta(seconds=rng.uniform(2, 20))


def day_weights(days: int, now: datetime) -> list[float]:
    """Each day's share of the traffic, oldest first: weekends quieter, a third more traffic
    at the end than at the start."""
    weights = []
    for back in range(days - 1, -1, -1):
        day = now - timedelta(days=back)
        weekday = 0.7 if day.weekday() >= 5 else 1.1
        weights.append(weekday * (1 + 0.33 * (days - back) / days))
    total = sum(weights)
    return [weight / total for weight in weights]


def events(rng: random.Random, site_id: int, domain: str, total: int, days: int,
           now: datetime, sampled_days: int = 2, sample_rate: float = 0.5) -> Iterator[Row]:
    """About `total` events over the `days` times 24 hours before `now`, day by day in time
    order (as ingest stores them). Returning visitors come back with the same browser (a third
    of the visits). In the last `sampled_days` days the site is over its quota: a `sample_rate`
    share of the visits is stored, at weight 1/sample_rate, so the stored events keep the
    day's share."""
    produced, sessions, visitors, per_visit = 0, 0, 0, 12.0
    for index, share in enumerate(day_weights(days, now)):
        day, sampled = now - timedelta(days=days - index), index >= days - sampled_days
        # As many visits as fill the day's share, at the events per visit seen so far.
        visits = round(total * share / per_visit / (sample_rate if sampled else 1))
        for start in sorted(day + timedelta(hours=HOUR(rng), seconds=rng.uniform(0, 3600))
                            for _ in range(visits)):
            sessions += 1
            if rng.random() < 0.33 and visitors > 10:
                visitor = visitors - int(rng.uniform(0, min(visitors, 200_000)))
            else:
                visitors += 1
                visitor = visitors
            if sampled and rng.random() >= sample_rate:
                continue
            weight = 1 / sample_rate if sampled else 1.0
            for row in session_events(rng, site_id, domain, start, f"s{site_id}-{sessions}",
                                      visitor, weight):
                if row[0][3] <= now:  # a visit that runs on past the seeding's now
                    produced += 1
                    yield row
        per_visit = produced / max(sessions, 1) if not sampled else per_visit


def flat(rows: Iterator[Row]) -> Iterator[Sequence[Any]]:
    """The rows as one tuple each, in EVENT_COLUMNS order."""
    for event, page, visit in rows:
        yield event + page + visit
