"""The analytics tools' numbers, against values computed here independently of the SQL.

`build_dataset` seeds one month of traffic (sampled sessions, identified users, refunds, a
resent order, crawler hits, ingest tallies, events just outside the period and another site's
events) straight through the models, each row with the columns ingest derives
(app.tracking.ingest.page_columns); `Expected` recomputes every figure from those Python rows
with the definitions of docs/AGENTS.md written out plainly (a visit's source and channel from
the table SOURCES, written by hand). Each tool is called through the MCP endpoint
(tools/call); tests/agent/test_mcp_client.py runs the same comparison through the official MCP
client against a real server.
"""
import random
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from app.access import keys
from app.revenue.money import to_major_units
from app.rollups import merging as rollups
from app.tracking.ingest import page_columns
from models import CrawlHit, Event, IngestTally, ServerEvent, Site, database
from models.api_key import SERVER

FIRST, LAST = date(2026, 3, 1), date(2026, 3, 31)
PERIOD = {"from": FIRST.isoformat(), "to": LAST.isoformat()}
START, END = datetime(2026, 3, 1), datetime(2026, 4, 1)
LOOKBACK_START = START - timedelta(days=30)
DOMAIN = "std.example"
VITALS = ("lcp", "inp", "cls", "fcp", "ttfb")
EVENT_TYPES = ("pageview", "click", "form_submit", "scroll", "performance", "custom", "goal",
               "error", "heartbeat")
INTERACTIONS = {"click", "form_submit", "custom", "goal", "heartbeat"}
PAGES = ["https://std.example/", "https://std.example/pricing", "https://std.example/pricing?x=1",
         "https://www.std.example/docs/start#intro", "/blog/hello", "/blog/hello?ref=nav",
         "https://std.example", "https://std.example?q=1", "https://std.example/a/b/c?x=y#z"]
REFERRERS = ["", None, "https://www.Google.com/search?q=egis", "https://news.ycombinator.com/item",
             "https://std.example/pricing", "https://blog.std.example/post", "garbage",
             "android-app://com.google.android.gm/", "https://t.co:443/x", "https://duckduckgo.com"]
ERRORS = ["TypeError: x is undefined", "ReferenceError: y is not defined", "", None]
# visit:source and visit:channel of an entry page view from each referrer, without UTM
# parameters (docs/AGENTS.md's definitions, applied by hand): a referrer from the site itself
# (std.example, its subdomains) or no URL with a host is none.
SOURCES = {"": ("(direct)", "Direct"), None: ("(direct)", "Direct"),
           "https://www.Google.com/search?q=egis": ("Google", "Organic Search"),
           "https://news.ycombinator.com/item": ("Hacker News", "Organic Social"),
           "https://std.example/pricing": ("(direct)", "Direct"),
           "https://blog.std.example/post": ("(direct)", "Direct"),
           "garbage": ("(direct)", "Direct"),
           "android-app://com.google.android.gm/": ("Gmail", "Email"),
           "https://t.co:443/x": ("X", "Organic Social"),
           "https://duckduckgo.com": ("DuckDuckGo", "Organic Search"),
           "https://www.bing.com/": ("Bing", "Organic Search")}


def with_query(url: str, parameters: str) -> str:
    """`url` with `parameters` added to its query string (before any fragment)."""
    parts = urlsplit(url)
    query = f"{parts.query}&{parameters}" if parts.query else parameters
    return parts._replace(query=query).geturl()


def _event(site_id: int, session: str | None, visitor: str | None, kind: str, at: datetime,
           weight: float = 1.0, url: str | None = "https://std.example/", name: str | None = None,
           referrer: str | None = None, properties: Any = None, user: str | None = None,
           received: datetime | None = None, domain: str = DOMAIN) -> dict[str, Any]:
    """One event row, with every column (insert_many takes its columns from the first row),
    the page and acquisition columns as ingest derives them for the site's `domain`."""
    return {"site_id": site_id, "batch_id": None, "session_id": session,
            "anonymous_id": visitor, "user_id": user, "type": kind, "name": name,
            "page_url": url, "page_title": None, "referrer": referrer, "properties": properties,
            "client_ts": None, "sent_ts": None, "occurred_at": at,
            "received_at": received or at + timedelta(seconds=1), "weight": weight,
            **page_columns(kind, url, referrer, domain)}


def _money_event(site_id: int, order: str | None, amount: int | None, currency: str | None,
                 at: datetime, user: str | None = None, session: str | None = None,
                 name: str = "purchase") -> dict[str, Any]:
    return {"uid": uuid.uuid4(), "site_id": site_id, "event_name": name,
            "identified_user_id": user, "anonymous_id": None, "session_id": session,
            "order_id": order, "amount_minor": amount, "currency": currency, "properties": None,
            "client_ts": None, "occurred_at": at, "received_at": at + timedelta(seconds=2)}


@dataclass
class Dataset:
    site: Site
    events: list[dict[str, Any]] = field(default_factory=list)
    server_events: list[dict[str, Any]] = field(default_factory=list)
    crawl_hits: list[dict[str, Any]] = field(default_factory=list)
    tallies: list[dict[str, Any]] = field(default_factory=list)


def _session(rng: random.Random, data: Dataset, number: int, start: datetime) -> None:
    """A visit: page views, each followed by what a tracker sends while the page is open.
    Sampling keeps or drops whole sessions, so one weight per session."""
    site_id = data.site.id
    session, visitor = f"s{number}", f"v{rng.randrange(40)}"
    weight = 10.0 if number % 4 == 0 else 1.0
    user = f"u{number // 3 % 9}" if number % 3 == 0 else None
    referrer = rng.choice(REFERRERS)
    utm_in_url = rng.choice([None, None, "newsletter", "twitter"])
    utm_property = rng.choice([None, None, None, "partner", ""])
    at = start

    def add(kind: str, url: str, **extra: Any) -> None:
        identified = user if data.events and data.events[-1]["session_id"] == session else None
        data.events.append(_event(site_id, session, visitor, kind, at, weight, url,
                                  user=identified, **extra))

    for view in range(rng.choice([1, 1, 1, 2, 3, 4])):
        url = rng.choice(PAGES)
        if view == 0 and utm_in_url:
            url = with_query(url, f"utm_source={utm_in_url}&utm_medium=email")
        properties = {"utm_source": utm_property} if view == 0 and utm_property is not None \
            else None
        add("pageview", url, referrer=referrer if view == 0 else "https://std.example/",
            properties=properties)
        for _ in range(rng.choice([0, 0, 1, 2, 3])):
            at += timedelta(seconds=15)
            add("heartbeat", url)
        for depth in (25, 50, 75, 100)[:rng.randrange(3)]:
            add("scroll", url, properties={"depth": depth})
        if rng.random() < 0.25:
            add("click", url, properties={"element": "a"})
        if rng.random() < 0.5:  # one metric per event, or several, as spec.md allows
            for metrics in (rng.sample(VITALS, 2), rng.sample(VITALS, 1)):
                add("performance", url, properties={
                    metric: rng.choice([rng.randrange(50, 5000), round(rng.uniform(0, 1), 3)])
                    for metric in metrics})
        if rng.random() < 0.15:
            add("performance", url, properties=rng.choice([
                {"fid": 12}, {"lcp": "slow"}, {"inp": None}, {"value": 3}, {"cls": True},
                {"metric": "lcp", "value": 1200}, {"ttfb": 80, "lcp": [1]}]))
        if rng.random() < 0.2:
            message = rng.choice(ERRORS)
            add("error", url, properties=None if message is None else {"message": message,
                                                                       "stack": "at f"})
        if rng.random() < 0.15:
            add("goal", url, name=rng.choice(["signup", "purchase", "newsletter"]))
        if rng.random() < 0.1:
            add("custom", url, name=rng.choice(["video_play", "search"]))
        if rng.random() < 0.05:
            add("form_submit", url, properties={"formName": "contact"})
        at += timedelta(seconds=rng.randrange(20, 400))


def build_dataset(site: Site, other: Site, seed: int = 7) -> Dataset:
    rng = random.Random(seed)
    data = Dataset(site)
    for number in range(90):
        start = START + timedelta(minutes=rng.randrange(120, 31 * 24 * 60 - 120))
        _session(rng, data, number, start)
    # The edges of the period, and what is not a session.
    edge = [
        _event(site.id, "early", "v-edge", "pageview", START - timedelta(microseconds=1)),
        _event(site.id, "late", "v-edge", "pageview", END),
        _event(site.id, "last", "v-edge", "pageview", END - timedelta(microseconds=1),
               received=END + timedelta(seconds=3)),
        _event(site.id, "early", "v-edge", "heartbeat", START + timedelta(seconds=5)),
        _event(site.id, None, "v-api", "goal", START + timedelta(days=3), name="signup",
               url=None),
        _event(site.id, None, None, "custom", START + timedelta(days=4), name="search"),
    ]
    # Sessions before the period, for the revenue lookback (one within 30 days, one not).
    edge += [
        _event(site.id, "feb", "v-feb", "pageview", datetime(2026, 2, 20, 10),
               referrer="https://www.bing.com/", user=None),
        _event(site.id, "feb", "v-feb", "click", datetime(2026, 2, 20, 10, 1), user="u-feb"),
        _event(site.id, "jan", "v-jan", "pageview", datetime(2026, 1, 15, 10),
               referrer="https://www.bing.com/"),
        _event(site.id, "jan", "v-jan", "click", datetime(2026, 1, 15, 10, 1), user="u-jan"),
    ]
    data.events += edge
    data.events += [_event(other.id, "o1", "ov1", kind, START + timedelta(days=2, minutes=i),
                           name="signup" if kind == "goal" else None,
                           referrer="https://www.google.com/",
                           properties={"lcp": 99999, "message": "other"},
                           domain="other.example")
                    for i, kind in enumerate(EVENT_TYPES)]
    _money(rng, data, other)
    _crawls(rng, data, other)
    _tallies(rng, data, other)
    return data


def _money(rng: random.Random, data: Dataset, other: Site) -> None:
    site_id = data.site.id
    sessions = {e["session_id"]: e for e in data.events
                if e["type"] == "pageview" and e["session_id"] and e["session_id"][0] == "s"}
    rows = []
    for number in range(30):
        user = f"u{number % 11}"  # u9 and u10 never visited: unattributed
        at = START + timedelta(hours=rng.randrange(1, 31 * 24 - 1))
        amount = rng.randrange(100, 20000) * (-1 if number % 7 == 6 else 1)
        currency = rng.choice(["USD", "USD", "EUR", "JPY", "BHD"])
        rows.append(_money_event(site_id, f"o{number}", amount, currency, at, user=user))
    named = sorted(sessions)[5]
    rows += [
        # Named sessions win over the user link; an unknown session falls back to the user.
        _money_event(site_id, "named", 4200, "USD", END - timedelta(hours=1), user="u1",
                     session=named),
        _money_event(site_id, "unknown-session", 1000, "USD", END - timedelta(hours=2),
                     user="u3", session="no-such-session"),
        _money_event(site_id, None, 999, "EUR", START + timedelta(days=9)),  # no link at all
        _money_event(site_id, None, None, None, START + timedelta(days=9), user="u1",
                     name="signup"),  # no money: ignored
        _money_event(site_id, "lookback", 5000, "USD", START + timedelta(days=1), user="u-feb"),
        _money_event(site_id, "too-old", 7000, "USD", START + timedelta(days=1), user="u-jan"),
        _money_event(site_id, "first-hour", 300, "EUR", START + timedelta(minutes=1), user="u0"),
        _money_event(site_id, "february", 100, "USD", START - timedelta(days=2), user="u1"),
        _money_event(site_id, "april", 100, "USD", END, user="u1"),
        _money_event(other.id, "other", 123456, "USD", START + timedelta(days=2), user="u1"),
    ]
    data.server_events = rows


def _crawls(rng: random.Random, data: Dataset, other: Site) -> None:
    crawlers = [("GPTBot", "ai_training"), ("ClaudeBot", "ai_training"),
                ("PerplexityBot", "ai_search"), ("Googlebot", "search_engine"),
                ("AhrefsBot", "seo"), (None, "unknown")]
    rows = []
    for number in range(60):
        name, category = rng.choice(crawlers)
        rows.append({"site_id": data.site.id, "path": rng.choice(["/", "/pricing", "/docs/a"]),
                     "host": DOMAIN, "user_agent": f"{name}/1.0", "crawler": name,
                     "category": category, "network": None,
                     "verified": rng.choice([True, False, None]),
                     "spoofed": number % 13 == 0, "sec_fetch_dest": None,
                     "sec_fetch_mode": None,
                     "received_at": START + timedelta(hours=rng.randrange(-48, 31 * 24 + 48))})
    rows.append({**rows[0], "site_id": other.id, "received_at": START + timedelta(days=1)})
    data.crawl_hits = rows


def _tallies(rng: random.Random, data: Dataset, other: Site) -> None:
    rows = [{"site_id": data.site.id, "day": day, "reason": reason,
             "count": rng.randrange(1, 50)}
            for day in (date(2026, 2, 28), date(2026, 3, 2), date(2026, 3, 17), LAST)
            for reason in ("sampled", "duplicate", "duplicate_order", "duplicate_idempotency_key",
                           "bot", "rejected_400", "rejected_429")
            if rng.random() < 0.8]
    rows.append({"site_id": other.id, "day": date(2026, 3, 2), "reason": "sampled",
                 "count": 1000})
    data.tallies = rows


def seed(data: Dataset) -> None:
    with database.connection_context(), database.atomic():
        for chunk in range(0, len(data.events), 500):
            Event.insert_many(data.events[chunk:chunk + 500]).execute()
        for row in data.server_events:
            # Ingest's idempotency: a resent order is stored once (the unique index decides).
            ServerEvent.insert(row).on_conflict_ignore().execute()
        ServerEvent.insert(_money_event(data.site.id, "o1", 1, "USD", START)).on_conflict_ignore(
        ).execute()
        CrawlHit.insert_many(data.crawl_hits).execute()
        IngestTally.insert_many(data.tallies).execute()
        rollups.rebuild()  # the visit rows ingest keeps: these rows are inserted past ingest


# --- The definitions, recomputed over the Python rows --------------------------------------

def url_path(url: str | None) -> str:
    return urlsplit(url or "").path or "/"


def acquisition(entry: dict[str, Any]) -> tuple[str, str]:
    """(visit:source, visit:channel) of an entry page view: utm_source of its URL (the
    dataset's UTM visits carry utm_medium=email: channel Email), else SOURCES by referrer."""
    values = parse_qs(urlsplit(entry["page_url"] or "").query).get("utm_source")
    return (values[0], "Email") if values else SOURCES[entry["referrer"]]


def percentile_cont(values: list[float], fraction: float = 0.75) -> float:
    ordered = sorted(values)
    position = fraction * (len(ordered) - 1)
    low = int(position)
    high = ordered[low + 1] if low + 1 < len(ordered) else ordered[low]
    return ordered[low] + (high - ordered[low]) * (position - low)


def top(counts: dict[str, float], units: dict[str, dict[Any, float]] | None,
        limit: int) -> list[tuple[str, int, int]]:
    """(key, count, weighted distinct units) by count desc, then key."""
    keys = sorted(counts, key=lambda key: (-counts[key], key))[:limit]
    return [(key, round(counts[key]), round(sum((units or {}).get(key, {}).values())))
            for key in keys]


def _max_into(table: dict[Any, dict[Any, float]], key: Any, unit: Any, weight: float) -> None:
    if unit is not None:
        table[key][unit] = max(table[key].get(unit, 0.0), weight)


class Expected:
    def __init__(self, data: Dataset) -> None:
        self.data = data
        self.site_id = data.site.id
        self.events = [e for e in data.events
                       if e["site_id"] == self.site_id and START <= e["occurred_at"] < END]

    def of(self, *types: str) -> Iterator[dict[str, Any]]:
        return (e for e in self.events if not types or e["type"] in types)

    @staticmethod
    def estimated(rows: Any) -> bool:
        return any(row["weight"] != 1 for row in rows)

    def envelope(self) -> dict[str, Any]:
        return {"site": DOMAIN, "from": PERIOD["from"], "to": PERIOD["to"]}

    def sessions(self) -> dict[str, dict[str, Any]]:
        """Visits: a session id with a page view in the period, from its events there."""
        found: dict[str, dict[str, Any]] = {}
        for e in self.events:
            if e["session_id"] is None:
                continue
            s = found.setdefault(e["session_id"], {"w": 0.0, "pageviews": 0, "interactions": 0,
                                                   "visitor": None, "times": []})
            s["w"] = max(s["w"], e["weight"])
            s["visitor"] = max(s["visitor"] or "", e["anonymous_id"] or "") or None
            s["pageviews"] += e["type"] == "pageview"
            s["interactions"] += e["type"] in INTERACTIONS
            s["times"].append(e["occurred_at"])
        return {key: s for key, s in found.items() if s["pageviews"]}

    def overview(self) -> dict[str, Any]:
        sessions = self.sessions()
        weight = sum(s["w"] for s in sessions.values())
        visitors: dict[str, float] = {}
        for s in sessions.values():
            visitors[s["visitor"]] = max(visitors.get(s["visitor"], 0.0), s["w"])
        bounces = sum(s["w"] for s in sessions.values()
                      if s["pageviews"] == 1 and not s["interactions"])
        duration = sum((max(s["times"]) - min(s["times"])).total_seconds() * s["w"]
                       for s in sessions.values())
        by_type: dict[str, float] = defaultdict(float)
        for e in self.events:
            by_type[e["type"]] += e["weight"]
        return {**self.envelope(), "visitors": round(sum(visitors.values())),
                "visits": round(weight), "pageviews": round(by_type["pageview"]),
                "bounce_rate": round(bounces / weight * 100, 1),
                "visit_duration": round(duration / weight),
                "events_by_type": {key: round(value) for key, value in
                                   sorted(by_type.items(), key=lambda kv: (-kv[1], kv[0]))},
                "estimated": self.estimated(self.events)}

    def entries(self, since: datetime = START, until: datetime = END
                ) -> dict[str, dict[str, Any]]:
        """Each session's first page view in [since, until)."""
        first: dict[str, dict[str, Any]] = {}
        for e in self.data.events:
            if (e["site_id"] == self.site_id and e["type"] == "pageview" and e["session_id"]
                    and since <= e["occurred_at"] < until):
                current = first.get(e["session_id"])
                if current is None or e["occurred_at"] < current["occurred_at"]:
                    first[e["session_id"]] = e
        return first

    def payments(self) -> list[dict[str, Any]]:
        stored: dict[str, dict[str, Any]] = {}
        payments = []
        for row in self.data.server_events:
            if row["order_id"] is not None:
                if (row["site_id"], row["order_id"]) in stored:
                    continue
                stored[(row["site_id"], row["order_id"])] = row
            if (row["site_id"] == self.site_id and START <= row["occurred_at"] < END
                    and row["amount_minor"] is not None):
                payments.append(row)
        return payments

    def attributed(self, payment: dict[str, Any]) -> tuple[str, str]:
        """(source, channel) of the visit a payment is credited to."""
        entries = self.entries(LOOKBACK_START, END)
        unattributed = ("(unattributed)", "(unattributed)")
        if payment["session_id"] in entries:
            return acquisition(entries[payment["session_id"]])
        user = payment["identified_user_id"]
        sessions = {e["session_id"] for e in self.data.events
                    if e["site_id"] == self.site_id and user is not None
                    and e["user_id"] == user and LOOKBACK_START <= e["occurred_at"] < END}
        candidates = [entries[s] for s in sessions if s in entries
                      and entries[s]["occurred_at"] <= payment["occurred_at"]]
        if not candidates:
            return unattributed
        return acquisition(max(candidates, key=lambda entry: entry["occurred_at"]))

    @staticmethod
    def money(rows: list[dict[str, Any]], currency: str) -> dict[str, Any]:
        gross = sum(r["amount_minor"] for r in rows if r["amount_minor"] > 0)
        refunds = -sum(r["amount_minor"] for r in rows if r["amount_minor"] < 0)

        def major(minor: int) -> str:
            return str(to_major_units(minor, currency))

        return {"currency": currency, "gross_minor": gross, "gross": major(gross),
                "refunds_minor": refunds, "refunds": major(refunds),
                "net_minor": gross - refunds, "net": major(gross - refunds),
                "orders": sum(r["amount_minor"] > 0 for r in rows),
                "refund_count": sum(r["amount_minor"] < 0 for r in rows)}

    def revenue(self, limit: int = 100) -> dict[str, Any]:
        payments = self.payments()
        per_currency: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in payments:
            per_currency[row["currency"]].append(row)

        def credited(key: str, at: int) -> list[dict[str, Any]]:
            per: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
            for row in payments:
                per[(row["currency"], self.attributed(row)[at])].append(row)
            rows = [{key: value, **{name: money[name] for name in
                                    ("currency", "net_minor", "net", "orders")}}
                    for (currency, value), members in per.items()
                    for money in [self.money(members, currency)]]
            rows.sort(key=lambda row: (row["currency"], -row["net_minor"], row[key]))
            return rows

        return {**self.envelope(),
                "currencies": [self.money(per_currency[c], c) for c in sorted(per_currency)],
                "by_source": credited("source", 0), "by_channel": credited("channel", 1),
                "estimated": False}

    def web_vitals(self, limit: int = 10) -> dict[str, Any]:
        samples = []
        for e in self.of("performance"):
            props = e["properties"] or {}
            for metric in VITALS:
                value = props.get(metric)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    samples.append((url_path(e["page_url"]), metric, float(value), e["weight"]))
        page_weight: dict[str, float] = defaultdict(float)
        for page, _, _, weight in samples:
            page_weight[page] += weight
        pages = sorted(page_weight, key=lambda page: (-page_weight[page], page))[:limit]

        def p75(rows: list[tuple[str, str, float, float]], metric: str) -> Any:
            values = [value for _, m, value, _ in rows if m == metric]
            if not values:
                return None
            return {"p75": percentile_cont(values),
                    "samples": round(sum(w for _, m, _, w in rows if m == metric))}

        site = {metric: p75(samples, metric) for metric in VITALS}
        for metric, vital in site.items():
            if vital:
                good, poor = {"lcp": (2500, 4000), "inp": (200, 500), "cls": (0.1, 0.25),
                              "fcp": (1800, 3000), "ttfb": (800, 1800)}[metric]
                vital["rating"] = ("good" if vital["p75"] <= good else "needs improvement"
                                   if vital["p75"] <= poor else "poor")
        listed = []
        for page in pages:
            rows = [row for row in samples if row[0] == page]
            listed.append({"page": page, "samples": round(page_weight[page]),
                           **{metric: (p75(rows, metric) or {}).get("p75") for metric in VITALS}})
        return {**self.envelope(), "site_vitals": site, "pages": listed,
                "estimated": any(w != 1 for *_, w in samples)}

    def errors(self, limit: int = 10) -> dict[str, Any]:
        occurrences: dict[str, float] = defaultdict(float)
        sessions: dict[str, dict[Any, float]] = defaultdict(dict)
        last: dict[str, datetime] = {}
        rows = list(self.of("error"))
        for e in rows:
            message = (e["properties"] or {}).get("message") or "(no message)"
            occurrences[message] += e["weight"]
            _max_into(sessions, message, e["session_id"], e["weight"])
            last[message] = max(last.get(message, e["occurred_at"]), e["occurred_at"])
        return {**self.envelope(),
                "errors": [{"message": key, "occurrences": count, "sessions": units,
                            "last_seen": last[key].replace(microsecond=0).isoformat() + "Z"}
                           for key, count, units in top(occurrences, sessions, limit)],
                "total_errors": round(sum(occurrences.values())),
                "distinct_messages": len(occurrences), "estimated": self.estimated(rows)}

    def crawler_activity(self, limit: int = 10, category: str | None = None) -> dict[str, Any]:
        hits = [h for h in self.data.crawl_hits if h["site_id"] == self.site_id
                and START <= h["received_at"] < END
                and (category is None or h["category"] == category)]
        per: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        categories: dict[str, int] = defaultdict(int)
        paths: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for h in hits:
            per[(h["crawler"] or "(unknown)", h["category"])].append(h)
            categories[h["category"]] += 1
            paths[h["path"]].append(h)
        crawler_keys = sorted(per, key=lambda key: (-len(per[key]), key))[:limit]
        return {**self.envelope(), "total_hits": len(hits),
                "categories": [{"category": c, "hits": n} for c, n in
                               sorted(categories.items(), key=lambda kv: (-kv[1], kv[0]))],
                "crawlers": [{"crawler": name, "category": cat, "hits": len(per[(name, cat)]),
                              "verified": sum(h["verified"] is True for h in per[(name, cat)]),
                              "spoofed": sum(h["spoofed"] for h in per[(name, cat)]),
                              "last_seen": max(h["received_at"] for h in per[(name, cat)])
                              .replace(microsecond=0).isoformat() + "Z"}
                             for name, cat in crawler_keys],
                "top_paths": [{"path": p, "hits": len(paths[p]),
                               "crawlers": len({h["crawler"] for h in paths[p]
                                                if h["crawler"] is not None})}
                              for p in sorted(paths, key=lambda p: (-len(paths[p]), p))[:limit]],
                "estimated": False}

    def ingest_health(self) -> dict[str, Any]:
        columns = ("events_stored", "server_events_stored", "crawl_hits_stored",
                   "sampled_away", "duplicate_batches", "duplicate_orders",
                   "duplicate_idempotency_keys", "bot_filtered", "rejected_total")
        days: dict[str, dict[str, Any]] = {}

        def day(moment: date) -> dict[str, Any]:
            key = moment.isoformat()
            return days.setdefault(key, {"date": key, **dict.fromkeys(columns, 0),
                                         "rejected": {}})

        stored_orders = {(row["site_id"], row["order_id"]): row for row in
                         reversed(self.data.server_events) if row["order_id"] is not None}
        server_rows = [row for row in self.data.server_events
                       if row["order_id"] is None
                       or stored_orders[(row["site_id"], row["order_id"])] is row]
        for rows, column in ((self.data.events, "events_stored"),
                             (server_rows, "server_events_stored"),
                             (self.data.crawl_hits, "crawl_hits_stored")):
            for row in rows:
                if row["site_id"] == self.site_id and START <= row["received_at"] < END:
                    day(row["received_at"].date())[column] += 1
        names = {"sampled": "sampled_away", "duplicate": "duplicate_batches",
                 "duplicate_order": "duplicate_orders",
                 "duplicate_idempotency_key": "duplicate_idempotency_keys", "bot": "bot_filtered"}
        for row in self.data.tallies:
            if row["site_id"] == self.site_id and FIRST <= row["day"] <= LAST:
                entry = day(row["day"])
                if row["reason"] in names:
                    entry[names[row["reason"]]] += row["count"]
                else:
                    entry["rejected"][row["reason"]] = row["count"]
                    entry["rejected_total"] += row["count"]
        listed = [days[key] for key in sorted(days)]
        totals: dict[str, Any] = {c: sum(d[c] for d in listed) for c in columns}
        totals["rejected"] = defaultdict(int)
        for entry in listed:
            for reason, count in entry["rejected"].items():
                totals["rejected"][reason] += count
        totals["rejected"] = dict(totals["rejected"])
        return {**self.envelope(), "days": listed, "totals": totals, "estimated": False}


# --- Calling the tools through the endpoint ------------------------------------------------

@pytest.fixture
def dataset(app, make_site) -> Dataset:
    site_keys = make_site(DOMAIN, "standard")
    other = make_site("other.example", "standard")
    data = build_dataset(site_keys.site, other.site)
    with app.app_context():
        seed(data)
    data.keys = site_keys  # type: ignore[attr-defined]
    return data


@pytest.fixture
def call(app, dataset) -> Callable[..., dict[str, Any]]:
    client = app.test_client()

    def call_tool(tool: str, **arguments: Any) -> dict[str, Any]:
        response = client.post("/api/mcp", headers={
            **dataset.keys.server_headers(), "MCP-Protocol-Version": "2025-11-25",
            "Accept": "application/json, text/event-stream"}, json={
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": {**PERIOD, **arguments}}})
        assert response.status_code == 200, response.data
        result = response.get_json()["result"]
        assert result["isError"] is False, result
        assert result["content"][0]["type"] == "text" and result["content"][0]["text"]
        return result["structuredContent"]

    return call_tool


@pytest.fixture
def expected(dataset) -> Expected:
    return Expected(dataset)


def _compare(actual: Any, wanted: Any, path: str = "") -> None:
    if isinstance(wanted, dict):
        assert isinstance(actual, dict), f"{path}: {actual!r} is not an object"
        assert set(actual) == set(wanted), f"{path}: {sorted(actual)} != {sorted(wanted)}"
        for key in wanted:
            _compare(actual[key], wanted[key], f"{path}.{key}")
    elif isinstance(wanted, list):
        assert isinstance(actual, list) and len(actual) == len(wanted), \
            f"{path}: {actual} != {wanted}"
        for index, (a, w) in enumerate(zip(actual, wanted, strict=True)):
            _compare(a, w, f"{path}[{index}]")
    elif isinstance(wanted, float):
        assert actual == pytest.approx(wanted, rel=1e-9), f"{path}: {actual} != {wanted}"
    else:
        assert actual == wanted, f"{path}: {actual!r} != {wanted!r}"


def check(actual: dict[str, Any], wanted: dict[str, Any]) -> None:
    _compare(actual, wanted)


# --- The tests ---------------------------------------------------------------------------

def test_the_dataset_covers_what_it_should(expected):
    assert expected.estimated(expected.events)  # sampled sessions
    assert any(e["session_id"] is None for e in expected.events)
    assert {e["type"] for e in expected.events} == set(EVENT_TYPES)
    assert any(r["amount_minor"] < 0 for r in expected.payments())
    assert len({expected.attributed(p) for p in expected.payments()}) >= 4
    # every referrer of the table (Bing: before the period), and a UTM source, begins a visit
    entries = expected.entries().values()
    assert {e["referrer"] for e in entries} | {"https://www.bing.com/"} == set(SOURCES)
    assert any("utm_source=" in e["page_url"] for e in entries)


def test_overview(call, expected):
    check(call("get_overview"), expected.overview())


def test_revenue_per_currency_source_and_channel(call, expected):
    check(call("get_revenue", limit=100), expected.revenue())


def test_revenue_attribution_cases(expected):
    """The rules, case by case, on the seeded rows (the tool is compared above)."""
    by_order = {p["order_id"]: p for p in expected.payments()}
    assert expected.attributed(by_order["lookback"]) == ("Bing", "Organic Search")
    assert expected.attributed(by_order["too-old"]) == ("(unattributed)",) * 2
    assert expected.attributed(by_order["first-hour"]) == ("(unattributed)",) * 2
    named = by_order["named"]
    assert expected.attributed(named) == acquisition(expected.entries()[named["session_id"]])
    assert "february" not in by_order and "april" not in by_order
    assert sum(p["order_id"] == "o1" for p in expected.payments()) == 1


def test_revenue_lists_other_sources_beyond_the_limit(call, expected):
    full = expected.revenue()
    result = call("get_revenue", limit=1)
    for key, other in (("source", "(other sources)"), ("channel", "(other channels)")):
        per_currency = defaultdict(list)
        for row in full[f"by_{key}"]:
            per_currency[row["currency"]].append(row)
        listed_rows = result[f"by_{key}"]
        assert [row["currency"] for row in listed_rows] == sorted(
            row["currency"] for row in listed_rows)
        for currency, rows in per_currency.items():
            listed = [row for row in listed_rows if row["currency"] == currency]
            assert listed[0] == rows[0]
            if len(rows) > 1:
                assert listed[1][key] == other
                assert listed[1]["net_minor"] == sum(row["net_minor"] for row in rows[1:])
                assert listed[1]["orders"] == sum(row["orders"] for row in rows[1:])
                assert Decimal(listed[1]["net"]) == sum(Decimal(row["net"]) for row in rows[1:])


@pytest.mark.parametrize("limit", [2, 100])
def test_web_vitals(call, expected, limit):
    check(call("get_web_vitals", limit=limit), expected.web_vitals(limit))


def test_errors(call, expected):
    check(call("get_errors"), expected.errors())


@pytest.mark.parametrize("arguments", [{}, {"category": "ai_training"}, {"limit": 2}])
def test_crawler_activity(call, expected, arguments):
    check(call("get_crawler_activity", **arguments),
          expected.crawler_activity(arguments.get("limit", 10), arguments.get("category")))


def test_ingest_health(call, expected):
    check(call("get_ingest_health"), expected.ingest_health())


def test_a_period_of_one_day(call, expected):
    day = {"from": "2026-03-31", "to": "2026-03-31"}
    result = call("get_overview", **day)
    rows = [e for e in expected.events if e["occurred_at"].date() == LAST]
    assert sum(result["events_by_type"].values()) == round(sum(e["weight"] for e in rows))
    assert result["from"] == result["to"] == "2026-03-31"


def test_default_period_is_the_last_30_days(app, make_site):
    fresh = make_site("fresh.example", "standard")
    now = datetime.utcnow().replace(microsecond=0)
    with app.app_context(), database.connection_context():
        Event.insert_many([_event(fresh.site.id, f"s{d}", "v", "pageview",
                                  now - timedelta(days=d), domain="fresh.example")
                           for d in (0, 29, 30)]).execute()
        rollups.rebuild()
    response = app.test_client().post("/api/mcp", headers=fresh.server_headers(), json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "get_overview", "arguments": {}}})
    result = response.get_json()["result"]["structuredContent"]
    assert result["to"] == now.date().isoformat()
    assert result["from"] == (now.date() - timedelta(days=29)).isoformat()
    assert result["pageviews"] == 2 and result["visits"] == 2


def test_tools_see_only_the_keys_site(app, dataset):
    with app.app_context(), database.connection_context():
        other = Site.get(Site.domain == "other.example")
        key = keys.issue(other, SERVER, app.config["SERVER_KEY_PREFIX"]).key
    response = app.test_client().post("/api/mcp", headers={
        "Authorization": f"Bearer {key}"}, json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "get_overview", "arguments": PERIOD}})
    result = response.get_json()["result"]["structuredContent"]
    assert result["site"] == "other.example"
    assert result["pageviews"] == 1 and result["visits"] == 1
    assert sum(result["events_by_type"].values()) == len(EVENT_TYPES)
