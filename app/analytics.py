"""Analytics over the stored events: the queries behind the MCP tools.

Every figure is an aggregate computed by the database (Peewee expressions, CTEs, window
functions); Python only reshapes the few aggregated rows that come back. Definitions:

Period       `from`/`to` are UTC calendar days, both inclusive, applied to the skew-corrected
             event time (`occurred_at`); crawl hits and ingest health use the receive time.
Weights      an event stored while its site was over quota carries weight 1/sample rate. Counts
             are SUM(weight) and say `estimated` when any row behind them has a weight other
             than 1. Sampling keeps or drops whole sessions, so a session (or visitor) weighs
             the largest weight among its events.
Session      a session id with at least one page view in the period; visitors are the distinct
             anonymous ids of those sessions.
Bounce       a session with exactly one page view and no interaction: no click, form submit,
             custom event, goal or heartbeat. Scroll, performance and error events are passive.
Engaged time 15 s per heartbeat: the tracker sends one every 15 s while the page is visible, the
             first after 15 s. The average is over sessions.
Page         the path of `page_url`: scheme, host, query string and fragment removed, '/' when
             empty, so a UTM-tagged visit and a plain one count for the same page.
Source       read from the session's entry page view (its first, by time then id): the
             referrer's host, lower-cased, without `www.`; '(direct)' when the referrer is empty,
             not an absolute URL, or the site itself (its domain or a subdomain).
UTM source   the entry page view's `properties.utm_source` when set (the tracker or a backend put
             it there explicitly), else the `utm_source` parameter of its URL's query string, as
             sent (not URL-decoded).
Goals        conversions are weighted goal events; converting sessions have at least one;
             conversion rate = converting sessions / sessions.
Revenue      server events with an amount, by `occurred_at`, per currency, in integer minor
             units and in exact major units: gross (positive amounts), refunds (negative), net.
             Orders are positive server events; `orderId` is unique per site, so a resent order
             is stored, and counted, once. Revenue is never sampled.
Attribution  a payment goes to one session: the one named by the server event's `sessionId`
             when that session has a page view; else the latest session of its
             `identifiedUserId` (a session whose events carry that user id, set by the SDK's
             identify()) whose entry page view is at or before the payment, looking back at most
             ATTRIBUTION_LOOKBACK_DAYS before the period. Its source is the session's UTM source,
             else its referrer source. Payments without such a session: '(unattributed)'.
Web vitals   one metric per performance event, as the tracker sends one event per web-vitals
             callback: properties {"metric": "lcp"|"inp"|"cls"|"fcp"|"ttfb", "value": number}
             (milliseconds; CLS unitless); other metrics and non-numeric values are ignored.
             p75 is percentile_cont(0.75): the linear interpolation at position 0.75 x (n - 1)
             of the ascending values, PostgreSQL's ordered-set aggregate and the same arithmetic
             over window functions on SQLite. Percentiles are not weighted: a sampled period's
             samples are a uniform sample of its sessions (the result says `estimated`); the
             sample counts are.
Errors       error events grouped by `properties.message` ('(no message)' when missing).
"""
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from peewee import (
    JOIN,
    SQL,
    Case,
    ColumnBase,
    EnclosedNodeList,
    Expression,
    NodeList,
    Select,
    Value,
    fn,
)

from app.db import is_postgres
from app.revenue.money import MoneyError, to_major_units
from models import CrawlHit, Event, IngestTally, ServerEvent, Site, database
from models.event import EVENT_TYPES
from models.ingest_tally import BOT, DUPLICATE, SAMPLED

ATTRIBUTION_LOOKBACK_DAYS = 30
HEARTBEAT_SECONDS = 15
INTERACTIONS = ("click", "form_submit", "custom", "goal", "heartbeat")
VITALS = ("lcp", "inp", "cls", "fcp", "ttfb")
# Google's thresholds (good up to the first, poor above the second).
VITAL_THRESHOLDS = {"lcp": (2500, 4000), "inp": (200, 500), "cls": (0.1, 0.25),
                    "fcp": (1800, 3000), "ttfb": (800, 1800)}
DIRECT = "(direct)"
UNATTRIBUTED = "(unattributed)"
NO_MESSAGE = "(no message)"
UNKNOWN_CRAWLER = "(unknown)"
OTHER_SOURCES = "(other sources)"
MAX_DAYS = 366  # the longest period a tool accepts
P75 = 0.75
WORK_MEM = "64MB"


@dataclass(frozen=True)
class Period:
    """UTC days `first` to `last`, both inclusive."""

    first: date
    last: date

    @property
    def start(self) -> datetime:
        return datetime.combine(self.first, time())

    @property
    def end(self) -> datetime:
        return datetime.combine(self.last + timedelta(days=1), time())

    def covers(self, column: Any) -> Expression:
        return (column >= self.start) & (column < self.end)


# --- The few spellings that differ between PostgreSQL and SQLite ---------------------------

def _find(text: Any, needle: str) -> ColumnBase:
    """1-based position of `needle` in `text`, 0 when absent."""
    return fn.strpos(text, needle) if is_postgres() else fn.instr(text, needle)


def _json_member(column: Any, key: str, operator: str) -> Expression:
    # The ->/->> operators: cheaper than jsonb_extract_path (no variadic array per row).
    # coerce(False) keeps Peewee from passing `key` through the JSON field's db_value.
    return Expression(column.coerce(False), operator, key)


def _json_text(column: Any, key: str) -> ColumnBase:
    if is_postgres():
        return _json_member(column, key, "->>")
    return fn.json_extract(column, f"$.{key}").coerce(False).cast("TEXT")


def _json_number(column: Any, key: str) -> ColumnBase:
    """The member as a number; NULL when it is missing or not a JSON number."""
    if is_postgres():
        is_number = fn.jsonb_typeof(_json_member(column, key, "->")) == "number"
        value = _json_member(column, key, "->>").cast("double precision")
    else:
        is_number = fn.json_type(column, f"$.{key}").in_(("integer", "real"))
        value = fn.json_extract(column, f"$.{key}").coerce(False)
    return Case(None, [(is_number, value)])


def _bytewise(column: Any) -> Any:
    """Order text by code point on both backends (SQLite's default), whatever the collation."""
    return column.collate('"C"') if is_postgres() else column


# --- URL parts, spelled with substr/replace/position so both backends agree exactly ---------

def _before_first(text: Any, stops: str) -> ColumnBase:
    """`text` up to the first of the characters in `stops` (all of it when none occurs)."""
    marker = stops[0]
    marked = text
    for stop in stops[1:]:
        marked = fn.replace(marked, stop, marker)
    return fn.substr(text, 1, _find(marked.concat(marker), marker) - 1)


def _url_path(url: Any) -> ColumnBase:
    bare = _before_first(url, "?#")
    scheme_end = _find(bare, "://")
    authority_on = fn.substr(bare, scheme_end + 3)
    path = Case(None, [(scheme_end > 0,
                        fn.substr(authority_on, _find(authority_on.concat("/"), "/")))], bare)
    return fn.COALESCE(fn.NULLIF(path, ""), "/")


def _url_host(url: Any) -> ColumnBase:
    """Lower-cased host without `www.`; NULL unless `url` is absolute."""
    scheme_end = _find(url, "://")
    host = fn.lower(_before_first(fn.substr(url, scheme_end + 3), "/?#:"))
    bare = Case(None, [(fn.substr(host, 1, 4) == "www.", fn.substr(host, 5))], host)
    return Case(None, [(scheme_end > 0, fn.NULLIF(bare, ""))])


def _query_param(url: Any, name: str) -> ColumnBase:
    first, later = _find(url, f"?{name}="), _find(url, f"&{name}=")
    at = Case(None, [(first > 0, first)], later)
    value = _before_first(fn.substr(url, at + len(name) + 2), "&#")
    return Case(None, [(at > 0, fn.NULLIF(value, ""))])


# --- Shared pieces ------------------------------------------------------------------------

@contextmanager
def reading() -> Iterator[None]:
    """One read-only transaction per tool call, so its statements see one snapshot.

    On PostgreSQL the transaction also gets enough memory for a million-row hash or sort to stay
    off disk, and no JIT (compiling costs more than these queries run). Peewee has no spelling
    for SET, hence the three statements, PostgreSQL only.
    """
    with database.atomic():
        if is_postgres():
            database.execute_sql("SET TRANSACTION READ ONLY")
            database.execute_sql(f"SET LOCAL work_mem = '{WORK_MEM}'")
            database.execute_sql("SET LOCAL jit = off")
        yield


def _when(condition: Any, value: Any) -> Case:
    return Case(None, [(condition, value)], 0)


def _is_sampled(weight: Any) -> Case:
    return _when(weight != 1, 1)


def _events(site_id: int, period: Period, *types: str) -> Expression:
    where = (Event.site_id == site_id) & period.covers(Event.occurred_at)
    if len(types) == 1:
        where &= Event.type == types[0]
    elif types:
        where &= Event.type.in_(types)
    return where


def _count(value: Any) -> int:
    """A weighted count as the integer it estimates."""
    return round(float(value or 0))


def _rate(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def _day(value: Any) -> str:
    """An aggregated date or datetime (a string on SQLite) as YYYY-MM-DD."""
    return str(value)[:10]


def _timestamp(value: Any) -> str | None:
    if value is None:
        return None
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment.replace(microsecond=0).isoformat() + "Z"


def _fetch(query: Any) -> list[dict[str, Any]]:
    return list(query.bind(database).dicts())


def _event_rows(where: Expression, dim: str, key: Any, unit: Any, at: bool = False) -> Select:
    """Events as `_ranked` rows: dim, key, unit, w, uw, sampled[, at]."""
    return Event.select(Value(dim).alias("dim"), key.alias("key"), unit.alias("unit"),
                        Event.weight.alias("w"), Event.weight.alias("uw"),
                        _is_sampled(Event.weight).alias("sampled"),
                        *([Event.occurred_at.alias("at")] if at else [])).where(where)


def _url_pages(source: Any, name: str) -> Any:
    """CTE (url, page): the page path of each distinct `url` of `source`. Deriving it after the
    GROUP BY runs the string functions once per URL instead of once per event."""
    url = source.c.url
    return Select([source], [url, _url_path(url).alias("page")]).group_by(url).cte(name)


@dataclass(frozen=True)
class Ranking:
    rows: list[dict[str, Any]]  # key, count, units (, latest)
    total: int  # weighted count over every key, not only the listed ones
    keys: int  # how many distinct keys there are
    estimated: bool


EMPTY = Ranking([], 0, 0, False)


def _ranked(rows: Any, limits: dict[str, int], ctes: tuple[Any, ...] = (),
            latest: bool = False) -> dict[str, Ranking]:
    """Per dimension of `rows` (a CTE: dim, key, unit, w, uw, sampled[, at]), the top keys by
    weighted count, each with its weighted number of distinct non-null units (visitors,
    sessions; a unit weighs its largest weight `uw`), plus the dimension's totals. One
    statement whatever the number of dimensions, so the rows are read once.

    `w` is a weight, or a sum of weights when the caller pre-aggregated its rows."""
    c = rows.c
    per_unit = (Select([rows], [c.dim, c.key, c.unit, fn.SUM(c.w).alias("n"),
                                fn.MAX(c.uw).alias("uw"), fn.MAX(c.sampled).alias("sampled"),
                                *([fn.MAX(c.at).alias("at")] if latest else [])])
                .group_by(c.dim, c.key, c.unit).cte("per_unit"))
    u = per_unit.c
    in_dim = {"partition_by": [u.dim]}
    per_key = (Select([per_unit], [
        u.dim, u.key, fn.SUM(u.n).alias("n"),
        fn.SUM(Case(None, [(u.unit.is_null(False), u.uw)], 0)).alias("units"),
        fn.MAX(u.sampled).alias("sampled"),
        *([fn.MAX(u.at).alias("at")] if latest else []),
        fn.SUM(fn.SUM(u.n)).over(**in_dim).alias("total"),
        fn.MAX(fn.MAX(u.sampled)).over(**in_dim).alias("any_sampled"),
        fn.COUNT(SQL("*")).over(**in_dim).alias("keys"),
        fn.ROW_NUMBER().over(partition_by=[u.dim],
                             order_by=[fn.SUM(u.n).desc(), _bytewise(u.key)]).alias("place"),
    ]).group_by(u.dim, u.key).cte("per_key"))
    k = per_key.c
    limit = Case(k.dim, list(limits.items()), 0)
    found = _fetch(Select([per_key], [SQL("*")]).where(k.place <= limit)
                   .order_by(k.dim, k.place).with_cte(*ctes, rows, per_unit, per_key))
    rankings = dict.fromkeys(limits, EMPTY)
    for dim in limits:
        listed = [row for row in found if row["dim"] == dim]
        if listed:
            rankings[dim] = Ranking(
                [{"key": row["key"], "count": _count(row["n"]), "units": _count(row["units"]),
                  **({"latest": _timestamp(row["at"])} if latest else {})} for row in listed],
                _count(listed[0]["total"]), int(listed[0]["keys"]),
                bool(listed[0]["any_sampled"]))
    return rankings


def _site_domain(site: Site) -> str:
    domain = site.domain.lower()
    return domain[4:] if domain.startswith("www.") else domain


def _entries(site: Site, since: datetime, until: datetime,
             sessions: Any = None) -> tuple[Any, ...]:
    """CTEs ending with `entries`: each session's entry page view (its first, by time then id)
    with its source. Columns: session_id, visitor, w, sampled, started_at, referrer (a host or
    '(direct)'), utm_source. `sessions`, a subquery of session ids, restricts the work."""
    where = ((Event.site_id == site.id) & (Event.occurred_at >= since)
             & (Event.occurred_at < until) & (Event.type == "pageview")
             & Event.session_id.is_null(False))
    if sessions is not None:
        where &= Event.session_id.in_(sessions)
    entry_order = fn.ROW_NUMBER().over(partition_by=[Event.session_id],
                                       order_by=[Event.occurred_at, Event.id])
    page_views = (Event.select(Event.session_id.alias("session_id"),
                               Event.anonymous_id.alias("visitor"), Event.weight.alias("w"),
                               Event.occurred_at.alias("started_at"),
                               Event.referrer.alias("referrer"), Event.page_url.alias("url"),
                               Event.properties.alias("properties"),
                               entry_order.alias("entry_order"))
                  .where(where).cte("entry_candidates"))
    p = page_views.c
    firsts = (Select([page_views], [p.session_id, p.visitor, p.w, p.started_at, p.referrer,
                                    p.url, _json_text(p.properties, "utm_source")
                                    .alias("utm_property")])
              .where(p.entry_order == 1).cte("first_page_views"))
    f = firsts.c
    # Hosts and URL parameters are derived once per distinct referrer / URL (see _url_pages).
    host = _url_host(f.referrer)
    domain = _site_domain(site)
    own = host.is_null() | (host == domain) | host.endswith(f".{domain}")
    referrers = (Select([firsts], [f.referrer, Case(None, [(own, DIRECT)], host)
                                   .alias("source")]).group_by(f.referrer).cte("referrers"))
    url_utm = (Select([firsts], [f.url, _query_param(f.url, "utm_source").alias("utm_source")])
               .group_by(f.url).cte("url_utm"))
    r, q = referrers.c, url_utm.c
    entries = (Select([firsts.join(referrers, JOIN.LEFT_OUTER, on=(r.referrer == f.referrer))
                       .join(url_utm, JOIN.LEFT_OUTER, on=(q.url == f.url))],
                      [f.session_id, f.visitor, f.w, _is_sampled(f.w).alias("sampled"),
                       f.started_at, fn.COALESCE(r.source, DIRECT).alias("referrer"),
                       fn.COALESCE(fn.NULLIF(f.utm_property, ""), q.utm_source)
                       .alias("utm_source")])
               .cte("entries"))
    return page_views, firsts, referrers, url_utm, entries


# --- The tools' queries -------------------------------------------------------------------

def count_events(site_id: int, period: Period, limit: int, type_: str | None = None,
                 name: str | None = None) -> dict[str, Any]:
    where = _events(site_id, period, *([type_] if type_ else []))
    if name is not None:
        where &= Event.name == name
    day = database.truncate_date("day", Event.occurred_at)
    grouped = (Event.select(day.alias("day"), Event.name.alias("name"),
                            fn.SUM(Event.weight).alias("w"), fn.COUNT(Event.id).alias("stored"),
                            fn.MAX(_is_sampled(Event.weight)).alias("sampled"))
               .where(where).group_by(day, Event.name).cte("per_day_and_name"))
    g = grouped.c
    nothing = Value(None)
    rows = (Select([grouped], [Value("day").alias("dim"), g.day.cast("TEXT").alias("key"),
                               nothing.alias("unit"), g.w, g.w.alias("uw"), g.sampled])
            + Select([grouped], [Value("name"), g.name, nothing, g.w, g.w, g.sampled])
            .where(g.name.is_null(False))
            + Select([grouped], [Value("stored"), Value("all"), nothing, g.stored, g.w,
                                 Value(0)])
            ).cte("counted")
    ranked = _ranked(rows, {"day": MAX_DAYS, "name": limit, "stored": 1}, ctes=(grouped,))
    days = sorted(ranked["day"].rows, key=lambda row: row["key"])
    return {
        "type": type_, "name": name, "count": ranked["day"].total,
        "stored_events": ranked["stored"].total,
        "by_day": [{"date": _day(row["key"]), "count": row["count"]} for row in days],
        "by_name": [{"name": row["key"], "count": row["count"]} for row in ranked["name"].rows],
        "estimated": ranked["day"].estimated,
    }


def overview(site_id: int, period: Period) -> dict[str, Any]:
    per_type = [fn.SUM(_when(Event.type == name, Event.weight)).alias(name)
                for name in EVENT_TYPES]
    sessions = (Event.select(Event.session_id.alias("session_id"),
                             fn.MAX(Event.anonymous_id).alias("visitor"),
                             fn.MAX(Event.weight).alias("w"),
                             fn.MAX(_is_sampled(Event.weight)).alias("sampled"),
                             fn.SUM(_when(Event.type == "pageview", 1)).alias("pageviews"),
                             fn.SUM(_when(Event.type.in_(INTERACTIONS), 1)).alias("interactions"),
                             *per_type)
                .where(_events(site_id, period))  # NULL session_id: one group, not a session
                .group_by(Event.session_id).cte("per_session"))
    s = sessions.c
    is_session = s.session_id.is_null(False) & (s.pageviews > 0)
    bounced = is_session & (s.pageviews == 1) & (s.interactions == 0)
    visitors = (Select([sessions], [fn.MAX(s.w).alias("w")]).where(is_session)
                .group_by(s.visitor).cte("visitors"))
    totals = _fetch(Select([sessions], [
        fn.SUM(_when(is_session, s.w)).alias("sessions"),
        fn.SUM(_when(bounced, s.w)).alias("bounces"),
        fn.SUM(_when(is_session, s.heartbeat)).alias("heartbeats"),
        fn.MAX(s.sampled).alias("sampled"),
        Select([visitors], [fn.SUM(visitors.c.w)]).alias("visitors"),
        *[fn.SUM(getattr(s, name)).alias(name) for name in EVENT_TYPES],
    ]).with_cte(sessions, visitors))[0]
    session_count = float(totals["sessions"] or 0)
    engaged = HEARTBEAT_SECONDS * float(totals["heartbeats"] or 0)
    events = {name: _count(totals[name]) for name in EVENT_TYPES if totals[name]}
    return {
        "visitors": _count(totals["visitors"]), "sessions": _count(session_count),
        "pageviews": events.get("pageview", 0),
        "bounced_sessions": _count(totals["bounces"]),
        "bounce_rate": _rate(float(totals["bounces"] or 0), session_count),
        "engaged_seconds": round(engaged),
        "avg_engaged_seconds": round(engaged / session_count, 1) if session_count else None,
        "events_by_type": dict(sorted(events.items(), key=lambda item: (-item[1], item[0]))),
        "estimated": bool(totals["sampled"]),
    }


def top_pages(site_id: int, period: Period, limit: int) -> dict[str, Any]:
    per_visitor = (Event.select(Event.page_url.alias("url"), Event.anonymous_id.alias("visitor"),
                                fn.SUM(Event.weight).alias("w"), fn.MAX(Event.weight).alias("uw"),
                                fn.MAX(_is_sampled(Event.weight)).alias("sampled"))
                   .where(_events(site_id, period, "pageview"))
                   .group_by(Event.page_url, Event.anonymous_id).cte("url_visitors"))
    pages = _url_pages(per_visitor, "url_pages")
    v = per_visitor.c
    rows = (Select([per_visitor.join(pages, JOIN.LEFT_OUTER, on=(pages.c.url == v.url))],
                   [Value("page").alias("dim"), fn.COALESCE(pages.c.page, "/").alias("key"),
                    v.visitor.alias("unit"), v.w, v.uw, v.sampled]).cte("page_rows"))
    ranking = _ranked(rows, {"page": limit}, ctes=(per_visitor, pages))["page"]
    return {
        "pages": [{"page": row["key"], "pageviews": row["count"], "visitors": row["units"]}
                  for row in ranking.rows],
        "total_pageviews": ranking.total, "distinct_pages": ranking.keys,
        "estimated": ranking.estimated,
    }


def top_sources(site: Site, period: Period, limit: int) -> dict[str, Any]:
    *ctes, entries = _entries(site, period.start, period.end)
    e = entries.c
    rows = (Select([entries], [Value("referrer").alias("dim"), e.referrer.alias("key"),
                               e.visitor.alias("unit"), e.w, e.w.alias("uw"), e.sampled])
            + Select([entries], [Value("utm"), e.utm_source, e.visitor, e.w, e.w, e.sampled])
            .where(e.utm_source.is_null(False))).cte("sources")
    ranked = _ranked(rows, {"referrer": limit, "utm": limit}, ctes=(*ctes, entries))
    return {
        "sessions": ranked["referrer"].total,
        "referrers": [{"source": row["key"], "sessions": row["count"], "visitors": row["units"]}
                      for row in ranked["referrer"].rows],
        "utm_sources": [{"utm_source": row["key"], "sessions": row["count"],
                         "visitors": row["units"]} for row in ranked["utm"].rows],
        "estimated": ranked["referrer"].estimated,
    }


def goal_conversions(site_id: int, period: Period, limit: int,
                     goal: str | None = None) -> dict[str, Any]:
    goals = _events(site_id, period, "goal")
    if goal is not None:
        goals &= Event.name == goal
    rows = (_event_rows(goals, "goal", Event.name, Event.session_id)
            + _event_rows(goals, "any", Value("any goal"), Event.session_id)
            + _event_rows(_events(site_id, period, "pageview") & Event.session_id.is_null(False),
                          "sessions", Value("all"), Event.session_id)).cte("goal_rows")
    ranked = _ranked(rows, {"goal": limit, "any": 1, "sessions": 1})
    any_goal = ranked["any"].rows[0] if ranked["any"].rows else {"count": 0, "units": 0}
    sessions = ranked["sessions"].rows[0]["units"] if ranked["sessions"].rows else 0
    return {
        "sessions": sessions,
        "goals": [{"goal": row["key"], "conversions": row["count"],
                   "converting_sessions": row["units"],
                   "conversion_rate": _rate(row["units"], sessions)}
                  for row in ranked["goal"].rows],
        "total": {"conversions": any_goal["count"], "converting_sessions": any_goal["units"],
                  "conversion_rate": _rate(any_goal["units"], sessions)},
        "estimated": ranked["any"].estimated or ranked["sessions"].estimated,
    }


def _money(minor: int, currency: str) -> str | None:
    try:
        return str(to_major_units(minor, currency))
    except MoneyError:  # a currency withdrawn since it was stored
        return None


def _payments(site_id: int, period: Period) -> Any:
    amount = ServerEvent.amount_minor
    return (ServerEvent.select(ServerEvent.id.alias("id"),
                               ServerEvent.identified_user_id.alias("user_id"),
                               ServerEvent.session_id.alias("session_id"),
                               ServerEvent.occurred_at.alias("paid_at"),
                               amount.alias("amount"), ServerEvent.currency.alias("currency"))
            .where((ServerEvent.site_id == site_id) & period.covers(ServerEvent.occurred_at)
                   & amount.is_null(False) & ServerEvent.currency.is_null(False))
            .cte("payments"))


def _money_columns(amount: Any) -> list[Any]:
    return [fn.SUM(_when(amount > 0, amount)).alias("gross"),
            fn.SUM(_when(amount < 0, amount)).alias("refunded"),
            fn.SUM(amount).alias("net"),
            fn.SUM(_when(amount > 0, 1)).alias("orders"),
            fn.SUM(_when(amount < 0, 1)).alias("refunds")]


def _money_row(row: dict[str, Any]) -> dict[str, Any]:
    currency = row["currency"]
    gross, refunded, net = (int(row[name] or 0) for name in ("gross", "refunded", "net"))
    return {"gross_minor": gross, "gross": _money(gross, currency),
            "refunds_minor": -refunded, "refunds": _money(-refunded, currency),
            "net_minor": net, "net": _money(net, currency),
            "orders": int(row["orders"] or 0), "refund_count": int(row["refunds"] or 0)}


def revenue_by_source(site: Site, period: Period) -> list[dict[str, Any]]:
    """Revenue per (currency, traffic source) through the attribution join (module doc)."""
    payments = _payments(site.id, period)
    p = payments.c
    since = period.start - timedelta(days=ATTRIBUTION_LOOKBACK_DAYS)
    user_sessions = (Event.select(Event.user_id.alias("user_id"),
                                  Event.session_id.alias("session_id")).distinct()
                     .where((Event.site_id == site.id) & (Event.occurred_at >= since)
                            & (Event.occurred_at < period.end)
                            & Event.user_id.in_(Select([payments], [p.user_id]))
                            & Event.session_id.is_null(False))
                     .cte("user_sessions"))
    us = user_sessions.c
    linked = (Select([user_sessions], [us.session_id])
              | Select([payments], [p.session_id]).where(p.session_id.is_null(False)))
    *entry_ctes, entries = _entries(site, since, period.end, sessions=linked)
    e = entries.c
    source = fn.COALESCE(e.utm_source, e.referrer)
    named = Select([payments.join(entries, on=(e.session_id == p.session_id))],
                   [p.id.alias("payment"), source.alias("source"), e.started_at,
                    Value(0).alias("priority")])
    identified = Select(
        [payments.join(user_sessions, on=(us.user_id == p.user_id))
         .join(entries, on=((e.session_id == us.session_id) & (e.started_at <= p.paid_at)))],
        [p.id, source, e.started_at, Value(1)])
    candidates = (named + identified).cte("candidates")
    c = candidates.c
    choice = fn.ROW_NUMBER().over(partition_by=[c.payment],
                                  order_by=[c.priority, c.started_at.desc()])
    chosen = Select([candidates], [c.payment, c.source, choice.alias("choice")]).cte("chosen")
    r = chosen.c
    query = (Select([payments.join(chosen, JOIN.LEFT_OUTER,
                                   on=((r.payment == p.id) & (r.choice == 1)))],
                    [p.currency, r.source, *_money_columns(p.amount)])
             .group_by(p.currency, r.source)
             .with_cte(payments, user_sessions, *entry_ctes, entries, candidates, chosen))
    rows = [{"source": row["source"] or UNATTRIBUTED, "currency": row["currency"],
             **_money_row(row)} for row in _fetch(query)]
    rows.sort(key=lambda row: (row["currency"], -row["net_minor"], row["source"]))
    return rows


def revenue(site: Site, period: Period, limit: int) -> dict[str, Any]:
    payments = _payments(site.id, period)
    per_currency = _fetch(Select([payments], [payments.c.currency,
                                              *_money_columns(payments.c.amount)])
                          .group_by(payments.c.currency).order_by(payments.c.currency)
                          .with_cte(payments))
    return {
        "currencies": [{"currency": row["currency"], **_money_row(row)} for row in per_currency],
        "by_source": _top_per_currency(revenue_by_source(site, period), limit),
        "estimated": False,
    }


MONEY_COUNTS = ("gross_minor", "refunds_minor", "net_minor", "orders", "refund_count")


def _top_per_currency(rows: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """At most `limit` sources per currency; the rest summed as '(other sources)'."""
    kept: list[dict[str, Any]] = []
    others: dict[str, dict[str, Any]] = {}
    listed: dict[str, int] = {}
    for row in rows:
        currency = row["currency"]
        listed[currency] = listed.get(currency, 0) + 1
        if listed[currency] <= limit:
            kept.append(row)
            continue
        other = others.setdefault(currency, {"source": OTHER_SOURCES, "currency": currency,
                                             **dict.fromkeys(MONEY_COUNTS, 0)})
        for name in MONEY_COUNTS:
            other[name] += row[name]
    for other in others.values():
        for name in ("gross", "refunds", "net"):
            other[name] = _money(other[f"{name}_minor"], other["currency"])
        kept.append(other)
    kept.sort(key=lambda row: row["currency"])  # stable: each currency keeps its order
    return kept


def _rating(metric: str, value: float) -> str:
    good, poor = VITAL_THRESHOLDS[metric]
    return "good" if value <= good else "needs improvement" if value <= poor else "poor"


def _p75(source: Any) -> list[Any]:
    """Aggregates over `source` (value, w, sampled; on SQLite the `_p75_ranked` columns too):
    p75, samples, sampled.

    p75 is PostgreSQL's percentile_cont(0.75): the linear interpolation at position
    0.75 x (n - 1) of the ascending values. SQLite has no ordered-set aggregates, so there the
    same arithmetic runs on ROW_NUMBER/COUNT windows (`_p75_ranked`)."""
    s = source.c
    counted = [fn.SUM(s.w).alias("samples"), fn.MAX(s.sampled).alias("sampled")]
    if is_postgres():
        ordered = EnclosedNodeList([NodeList((SQL("ORDER BY"), s.value))])
        return [NodeList((fn.percentile_cont(P75), SQL("WITHIN GROUP"), ordered)).alias("p75"),
                *counted]
    # PostgreSQL computes lo + (hi - lo) * fraction; the same operations, in the same order.
    low = fn.MAX(Case(None, [(s.position == s.low, s.value)]))
    high = fn.COALESCE(fn.MAX(Case(None, [(s.position == s.low + 1, s.value)])), low)
    return [(low + (high - low) * fn.MAX(s.fraction)).alias("p75"), *counted]


def _p75_ranked(samples: Any, keys: list[Any]) -> tuple[Any, tuple[Any, ...]]:
    """What `_p75` aggregates, and the CTEs it needs. On SQLite: `samples` with each value's
    0-based rank (`position`) and the interpolation bounds (`low`, `fraction`)."""
    if is_postgres():
        return samples, ()
    s = samples.c
    position = fn.ROW_NUMBER().over(partition_by=keys, order_by=[s.value]) - 1
    span = (fn.COUNT(SQL("*")).over(partition_by=keys) - 1) * P75
    ranks = Select([samples], [*keys, s.value, s.w, s.sampled, position.alias("position"),
                               span.alias("span")]).cte("sample_ranks")
    r = ranks.c
    bounds = Select([ranks], [*[getattr(r, key.name) for key in keys], r.value, r.w, r.sampled,
                              r.position, r.span.cast("INTEGER").alias("low"),
                              (r.span - r.span.cast("INTEGER")).alias("fraction")]
                    ).cte("sample_bounds")
    return bounds, (ranks, bounds)


def _site_and_page_p75(samples: Any, top: Any,
                       top_urls: Any) -> tuple[Select, tuple[Any, ...]]:
    """Each metric's p75 for the whole site and for each top page (rows: whole_site, page_no,
    page, metric_no, p75, samples, sampled), and the further CTEs the query needs.

    PostgreSQL: GROUPING SETS, so that one sort serves both levels (rows of other pages come
    back with page_no NULL). SQLite has no grouping sets: the site's samples (page 0) and the
    top pages' samples are stacked, then grouped."""
    s, t, u = samples.c, top.c, top_urls.c
    if is_postgres():
        source = (samples.join(top_urls, JOIN.LEFT_OUTER, on=(u.url == s.url))
                  .join(top, JOIN.LEFT_OUTER, on=(t.page_no == u.page_no)))
        sets = EnclosedNodeList([EnclosedNodeList([s.metric_no]),
                                 EnclosedNodeList([s.metric_no, u.page_no, t.page])])
        return (Select([source], [fn.GROUPING(u.page_no).alias("whole_site"), u.page_no,
                                  t.page, s.metric_no, *_p75(samples)])
                .group_by(NodeList((SQL("GROUPING SETS"), sets)))), ()
    stacked = (Select([samples], [Value(0).alias("page_no"), s.metric_no, s.value, s.w,
                                  s.sampled])
               + Select([samples.join(top_urls, on=(u.url == s.url))],
                        [u.page_no, s.metric_no, s.value, s.w, s.sampled])).cte("stacked")
    ranked, ranking_ctes = _p75_ranked(stacked, [stacked.c.page_no, stacked.c.metric_no])
    r = ranked.c
    return (Select([ranked.join(top, JOIN.LEFT_OUTER, on=(t.page_no == r.page_no))],
                   [(r.page_no == 0).alias("whole_site"), r.page_no, fn.MAX(t.page).alias("page"),
                    r.metric_no, *_p75(ranked)])
            .group_by(r.page_no, r.metric_no)), (stacked, *ranking_ctes)


def web_vitals(site_id: int, period: Period, limit: int) -> dict[str, Any]:
    metric = _json_text(Event.properties, "metric")
    value = _json_number(Event.properties, "value")
    # Metrics and pages travel as small integers so that sorting compares numbers, not text.
    metric_no = Case(metric, [(name, number) for number, name in enumerate(VITALS)])
    samples = (Event.select(Event.page_url.alias("url"), metric_no.alias("metric_no"),
                            value.alias("value"), Event.weight.alias("w"),
                            _is_sampled(Event.weight).alias("sampled"))
               .where(_events(site_id, period, "performance") & metric.in_(VITALS)
                      & value.is_null(False)).cte("vital_samples"))
    s = samples.c
    per_url = (Select([samples], [s.url, fn.SUM(s.w).alias("n")]).group_by(s.url)
               .cte("vital_urls"))
    pages = _url_pages(per_url, "vital_pages")
    u, g = per_url.c, pages.c
    page_order = fn.ROW_NUMBER().over(order_by=[fn.SUM(u.n).desc(), _bytewise(g.page)])
    top = (Select([per_url.join(pages, on=(g.url == u.url))],
                  [g.page, page_order.alias("page_no")])
           .group_by(g.page).order_by(SQL("page_no")).limit(limit).cte("top_pages"))
    t = top.c
    top_urls = (Select([pages.join(top, on=(t.page == g.page))], [g.url, t.page_no])
                .cte("top_urls"))
    query, more_ctes = _site_and_page_p75(samples, top, top_urls)
    found = _fetch(query.with_cte(samples, per_url, pages, top, top_urls, *more_ctes))
    site_wide: dict[str, Any] = dict.fromkeys(VITALS)
    listed: dict[int, dict[str, Any]] = {}
    for row in found:
        name, p75, count = VITALS[row["metric_no"]], float(row["p75"]), _count(row["samples"])
        if row["whole_site"]:
            site_wide[name] = {"p75": p75, "samples": count, "rating": _rating(name, p75)}
            continue
        if row["page_no"] is None:  # the pages below the top ones, together
            continue
        page = listed.setdefault(row["page_no"], {"page": row["page"], "samples": 0,
                                                  **dict.fromkeys(VITALS)})
        page[name] = p75
        page["samples"] += count
    return {"site_vitals": site_wide, "pages": [listed[number] for number in sorted(listed)],
            "estimated": any(row["sampled"] for row in found)}


def errors(site_id: int, period: Period, limit: int) -> dict[str, Any]:
    message = fn.COALESCE(fn.NULLIF(_json_text(Event.properties, "message"), ""), NO_MESSAGE)
    rows = _event_rows(_events(site_id, period, "error"), "message", message, Event.session_id,
                       at=True).cte("error_events")
    ranking = _ranked(rows, {"message": limit}, latest=True)["message"]
    return {
        "errors": [{"message": row["key"], "occurrences": row["count"], "sessions": row["units"],
                    "last_seen": row["latest"]} for row in ranking.rows],
        "total_errors": ranking.total, "distinct_messages": ranking.keys,
        "estimated": ranking.estimated,
    }


def crawler_activity(site_id: int, period: Period, limit: int,
                     category: str | None = None) -> dict[str, Any]:
    where = (CrawlHit.site_id == site_id) & period.covers(CrawlHit.received_at)
    if category is not None:
        where &= CrawlHit.category == category
    hits = fn.COUNT(CrawlHit.id)
    crawler = fn.COALESCE(CrawlHit.crawler, UNKNOWN_CRAWLER)
    crawlers = _fetch(CrawlHit.select(crawler.alias("crawler"), CrawlHit.category,
                                      hits.alias("hits"),
                                      fn.SUM(_when(CrawlHit.verified, 1)).alias("verified"),
                                      fn.SUM(_when(CrawlHit.spoofed, 1)).alias("spoofed"),
                                      fn.MAX(CrawlHit.received_at).alias("last_seen"))
                      .where(where).group_by(crawler, CrawlHit.category)
                      .order_by(SQL("hits").desc(), _bytewise(crawler),
                                _bytewise(CrawlHit.category)).limit(limit))
    categories = _fetch(CrawlHit.select(CrawlHit.category, hits.alias("hits")).where(where)
                        .group_by(CrawlHit.category)
                        .order_by(SQL("hits").desc(), _bytewise(CrawlHit.category)))
    paths = _fetch(CrawlHit.select(CrawlHit.path, hits.alias("hits"),
                                   fn.COUNT(CrawlHit.crawler.distinct()).alias("crawlers"))
                   .where(where).group_by(CrawlHit.path)
                   .order_by(SQL("hits").desc(), _bytewise(CrawlHit.path)).limit(limit))
    return {
        "total_hits": sum(int(row["hits"]) for row in categories),
        "categories": [{"category": row["category"], "hits": int(row["hits"])}
                       for row in categories],
        "crawlers": [{"crawler": row["crawler"], "category": row["category"],
                      "hits": int(row["hits"]), "verified": int(row["verified"] or 0),
                      "spoofed": int(row["spoofed"] or 0),
                      "last_seen": _timestamp(row["last_seen"])} for row in crawlers],
        "top_paths": [{"path": row["path"], "hits": int(row["hits"]),
                       "crawlers": int(row["crawlers"])} for row in paths],
        "estimated": False,
    }


INGEST_COUNTS = ("events_stored", "server_events_stored", "crawl_hits_stored", "sampled_away",
                 "duplicate_batches", "bot_filtered", "rejected_total")
_TALLY_COLUMNS = {SAMPLED: "sampled_away", DUPLICATE: "duplicate_batches", BOT: "bot_filtered"}


def _stored_per_day(model: Any, column: str, site_id: int, period: Period) -> Select:
    day = database.truncate_date("day", model.received_at)
    return (model.select(Value(column).alias("column"), day.cast("TEXT").alias("day"),
                         fn.COUNT(model.id).alias("n"))
            .where((model.site_id == site_id) & period.covers(model.received_at))
            .group_by(day))


def ingest_health(site_id: int, period: Period) -> dict[str, Any]:
    """Per receive day: what was stored, and what was not and why (the ingest tallies)."""
    tallies = (IngestTally.select(IngestTally.reason, IngestTally.day.cast("TEXT"),
                                  fn.SUM(IngestTally.count))
               .where((IngestTally.site_id == site_id)
                      & IngestTally.day.between(period.first, period.last))
               .group_by(IngestTally.day, IngestTally.reason))
    found = _fetch(_stored_per_day(Event, "events_stored", site_id, period)
                   + _stored_per_day(ServerEvent, "server_events_stored", site_id, period)
                   + _stored_per_day(CrawlHit, "crawl_hits_stored", site_id, period)
                   + tallies)
    days: dict[str, dict[str, Any]] = {}
    for row in found:
        entry = days.setdefault(_day(row["day"]), {"date": _day(row["day"]),
                                                   **dict.fromkeys(INGEST_COUNTS, 0),
                                                   "rejected": {}})
        column, count = row["column"], int(row["n"])
        column = _TALLY_COLUMNS.get(column, column)
        if column in INGEST_COUNTS:
            entry[column] += count
        else:  # a rejection reason
            entry["rejected"][column] = entry["rejected"].get(column, 0) + count
            entry["rejected_total"] += count
    listed = [days[day] for day in sorted(days)]
    totals: dict[str, Any] = {name: sum(entry[name] for entry in listed)
                              for name in INGEST_COUNTS}
    totals["rejected"] = {}
    for entry in listed:
        for reason, count in entry["rejected"].items():
            totals["rejected"][reason] = totals["rejected"].get(reason, 0) + count
    return {"days": listed, "totals": totals, "estimated": False}
