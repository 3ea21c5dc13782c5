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
             (milliseconds; CLS unitless). p75 is the weighted nearest rank: the smallest value
             whose cumulative weight, in ascending order, reaches 75% of the total weight. It is
             the same SQL on both backends and honours sampling weights, which percentile_cont
             cannot.
Errors       error events grouped by `properties.message` ('(no message)' when missing).
"""
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from peewee import JOIN, SQL, Case, ColumnBase, Expression, Select, Value, Window, fn

from app.db import is_postgres
from app.money import MoneyError, to_major_units
from models import CrawlHit, Event, IngestTally, ServerEvent, Site, database
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


def _json_text(column: Any, key: str) -> ColumnBase:
    if is_postgres():
        return fn.jsonb_extract_path_text(column, key).coerce(False)
    return fn.json_extract(column, f"$.{key}").coerce(False).cast("TEXT")


def _json_number(column: Any, key: str) -> ColumnBase:
    """The member as a number; NULL when it is missing or not a JSON number."""
    if is_postgres():
        is_number = fn.jsonb_typeof(fn.jsonb_extract_path(column, key).coerce(False)) == "number"
        value = fn.jsonb_extract_path_text(column, key).coerce(False).cast("double precision")
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

def _when(condition: Any, value: Any) -> Case:
    return Case(None, [(condition, value)], 0)


def _sampled(weight: Any) -> ColumnBase:
    """1 when any weight in the group differs from 1 (the group holds sampled data)."""
    return fn.MAX(_when(weight != 1, 1))


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


@dataclass(frozen=True)
class Ranking:
    rows: list[dict[str, Any]]  # key, count, units (, latest)
    total: int  # weighted count over every key, not only the listed ones
    keys: int  # how many distinct keys there are
    estimated: bool


def _ranked(rows: Any, key: str, unit: str, limit: int, ctes: tuple[Any, ...] = (),
            where: Any = None, latest: bool = False) -> Ranking:
    """Top `key`s of the CTE `rows` (columns key, unit, w[, at]) by weighted count, with the
    weighted number of distinct non-null units (visitors, sessions) behind each key."""
    c = rows.c
    columns = [getattr(c, key).alias("key"), getattr(c, unit).alias("unit"),
               fn.SUM(c.w).alias("n"), fn.MAX(c.w).alias("uw"), _sampled(c.w).alias("sampled")]
    if latest:
        columns.append(fn.MAX(c.at).alias("at"))
    per_unit = Select([rows], columns)
    if where is not None:
        per_unit = per_unit.where(where)
    per_unit = per_unit.group_by(getattr(c, key), getattr(c, unit)).cte(f"{key}_per_{unit}")
    u = per_unit.c
    outer = [u.key, fn.SUM(u.n).alias("n"),
             fn.SUM(Case(None, [(u.unit.is_null(False), u.uw)], 0)).alias("units"),
             fn.MAX(u.sampled).alias("sampled"),
             fn.SUM(fn.SUM(u.n)).over().alias("total"),
             fn.MAX(fn.MAX(u.sampled)).over().alias("any_sampled"),
             fn.COUNT(SQL("*")).over().alias("keys")]
    if latest:
        outer.append(fn.MAX(u.at).alias("at"))
    query = (Select([per_unit], outer).group_by(u.key)
             .order_by(SQL("n").desc(), _bytewise(u.key)).limit(limit)
             .with_cte(*ctes, rows, per_unit))
    found = _fetch(query)
    if not found:
        return Ranking([], 0, 0, False)
    head = found[0]
    listed = [{"key": row["key"], "count": _count(row["n"]), "units": _count(row["units"]),
               **({"latest": _timestamp(row["at"])} if latest else {})} for row in found]
    return Ranking(listed, _count(head["total"]), int(head["keys"]), bool(head["any_sampled"]))


def _session_weights(site_id: int, period: Period) -> Any:
    """CTE: one row per session (a session id with a page view in the period) and its weight."""
    return (Event.select(Event.session_id.alias("session_id"), fn.MAX(Event.weight).alias("w"))
            .where(_events(site_id, period, "pageview") & Event.session_id.is_null(False))
            .group_by(Event.session_id).cte("session_weights"))


def _weighted_sessions(site_id: int, period: Period) -> tuple[float, bool]:
    sessions = _session_weights(site_id, period)
    row = _fetch(Select([sessions], [fn.SUM(sessions.c.w).alias("w"),
                                     _sampled(sessions.c.w).alias("sampled")])
                 .with_cte(sessions))[0]
    return float(row["w"] or 0), bool(row["sampled"])


def _site_hosts(site: Site) -> str:
    domain = site.domain.lower()
    return domain[4:] if domain.startswith("www.") else domain


def _entries(site: Site, since: datetime, until: datetime) -> tuple[Any, Any]:
    """CTEs (all entry page views, then one row per session): the session's entry page view with
    its source. Columns of the second: session_id, visitor, w, started_at, referrer, utm_source."""
    where = ((Event.site_id == site.id) & (Event.occurred_at >= since)
             & (Event.occurred_at < until) & (Event.type == "pageview")
             & Event.session_id.is_null(False))
    utm = fn.COALESCE(fn.NULLIF(_json_text(Event.properties, "utm_source"), ""),
                      _query_param(Event.page_url, "utm_source"))
    entry_order = fn.ROW_NUMBER().over(partition_by=[Event.session_id],
                                       order_by=[Event.occurred_at, Event.id])
    page_views = (Event.select(Event.session_id.alias("session_id"),
                               Event.anonymous_id.alias("visitor"), Event.weight.alias("w"),
                               Event.occurred_at.alias("started_at"),
                               _url_host(Event.referrer).alias("host"), utm.alias("utm_source"),
                               entry_order.alias("entry_order"))
                  .where(where).cte("entry_candidates"))
    p = page_views.c
    domain = _site_hosts(site)
    own = p.host.is_null() | (p.host == domain) | p.host.endswith(f".{domain}")
    referrer = Case(None, [(own, DIRECT)], p.host)
    entries = (Select([page_views], [p.session_id, p.visitor, p.w, p.started_at,
                                     referrer.alias("referrer"), p.utm_source])
               .where(p.entry_order == 1).cte("entries"))
    return page_views, entries


# --- The tools' queries -------------------------------------------------------------------

def count_events(site_id: int, period: Period, limit: int, type_: str | None = None,
                 name: str | None = None) -> dict[str, Any]:
    where = _events(site_id, period, *([type_] if type_ else []))
    if name is not None:
        where &= Event.name == name
    day = database.truncate_date("day", Event.occurred_at)
    days = _fetch(Event.select(day.alias("day"), fn.SUM(Event.weight).alias("n"),
                               fn.COUNT(Event.id).alias("stored"),
                               _sampled(Event.weight).alias("sampled"))
                  .where(where).group_by(day).order_by(day))
    named = Event.select(Event.name.alias("name"), Event.weight.alias("w")).where(where).cte(
        "named_events")
    names = _ranked(named, "name", "name", limit, where=named.c.name.is_null(False))
    return {
        "type": type_, "name": name,
        "count": _count(sum(float(row["n"]) for row in days)),
        "stored_events": sum(int(row["stored"]) for row in days),
        "by_day": [{"date": _day(row["day"]), "count": _count(row["n"])} for row in days],
        "by_name": [{"name": row["key"], "count": row["count"]} for row in names.rows],
        "estimated": any(row["sampled"] for row in days),
    }


def overview(site_id: int, period: Period) -> dict[str, Any]:
    is_type = Event.type == "pageview"
    sessions = (Event.select(Event.session_id.alias("session_id"),
                             fn.MAX(Event.anonymous_id).alias("visitor"),
                             fn.MAX(Event.weight).alias("w"),
                             fn.SUM(_when(is_type, 1)).alias("pageviews"),
                             fn.SUM(_when(Event.type.in_(INTERACTIONS), 1)).alias("interactions"),
                             fn.SUM(_when(Event.type == "heartbeat", Event.weight))
                             .alias("heartbeats"))
                .where(_events(site_id, period) & Event.session_id.is_null(False))
                .group_by(Event.session_id)
                .having(fn.SUM(_when(is_type, 1)) > 0).cte("sessions"))
    s = sessions.c
    visitors = (Select([sessions], [fn.MAX(s.w).alias("w")]).group_by(s.visitor)
                .cte("visitors"))
    bounced = (s.pageviews == 1) & (s.interactions == 0)
    totals = _fetch(Select([sessions], [
        fn.SUM(s.w).alias("sessions"), fn.SUM(_when(bounced, s.w)).alias("bounces"),
        fn.SUM(s.heartbeats).alias("heartbeats"), _sampled(s.w).alias("sampled"),
        Select([visitors], [fn.SUM(visitors.c.w)]).alias("visitors"),
    ]).with_cte(sessions, visitors))[0]
    by_type = _fetch(Event.select(Event.type.alias("type"), fn.SUM(Event.weight).alias("n"),
                                  _sampled(Event.weight).alias("sampled"))
                     .where(_events(site_id, period)).group_by(Event.type)
                     .order_by(SQL("n").desc(), _bytewise(Event.type)))
    session_count = float(totals["sessions"] or 0)
    engaged = HEARTBEAT_SECONDS * float(totals["heartbeats"] or 0)
    events = {row["type"]: _count(row["n"]) for row in by_type}
    return {
        "visitors": _count(totals["visitors"]), "sessions": _count(session_count),
        "pageviews": events.get("pageview", 0),
        "bounced_sessions": _count(totals["bounces"]),
        "bounce_rate": _rate(float(totals["bounces"] or 0), session_count),
        "engaged_seconds": round(engaged),
        "avg_engaged_seconds": round(engaged / session_count, 1) if session_count else None,
        "events_by_type": events,
        "estimated": bool(totals["sampled"]) or any(row["sampled"] for row in by_type),
    }


def top_pages(site_id: int, period: Period, limit: int) -> dict[str, Any]:
    views = (Event.select(_url_path(Event.page_url).alias("page"),
                          Event.anonymous_id.alias("visitor"), Event.weight.alias("w"))
             .where(_events(site_id, period, "pageview")).cte("page_views"))
    ranking = _ranked(views, "page", "visitor", limit)
    return {
        "pages": [{"page": row["key"], "pageviews": row["count"], "visitors": row["units"]}
                  for row in ranking.rows],
        "total_pageviews": ranking.total, "distinct_pages": ranking.keys,
        "estimated": ranking.estimated,
    }


def top_sources(site: Site, period: Period, limit: int) -> dict[str, Any]:
    page_views, entries = _entries(site, period.start, period.end)
    referrers = _ranked(entries, "referrer", "visitor", limit, ctes=(page_views,))
    utm = _ranked(entries, "utm_source", "visitor", limit, ctes=(page_views,),
                  where=entries.c.utm_source.is_null(False))
    return {
        "sessions": referrers.total,
        "referrers": [{"source": row["key"], "sessions": row["count"], "visitors": row["units"]}
                      for row in referrers.rows],
        "utm_sources": [{"utm_source": row["key"], "sessions": row["count"],
                         "visitors": row["units"]} for row in utm.rows],
        "estimated": referrers.estimated,
    }


def goal_conversions(site_id: int, period: Period, limit: int,
                     goal: str | None = None) -> dict[str, Any]:
    where = _events(site_id, period, "goal")
    if goal is not None:
        where &= Event.name == goal
    goals = (Event.select(Event.name.alias("goal"), Event.session_id.alias("session"),
                          Event.weight.alias("w")).where(where).cte("goal_events"))
    ranking = _ranked(goals, "goal", "session", limit)
    g = goals.c
    per_session = (Select([goals], [fn.MAX(g.w).alias("w")]).where(g.session.is_null(False))
                   .group_by(g.session).cte("converting_sessions"))
    converting = _fetch(Select([per_session], [fn.SUM(per_session.c.w).alias("w")])
                        .with_cte(goals, per_session))[0]["w"]
    sessions, sessions_sampled = _weighted_sessions(site_id, period)
    converting = float(converting or 0)
    return {
        "sessions": _count(sessions),
        "goals": [{"goal": row["key"], "conversions": row["count"],
                   "converting_sessions": row["units"],
                   "conversion_rate": _rate(row["units"], sessions)} for row in ranking.rows],
        "total": {"conversions": ranking.total, "converting_sessions": _count(converting),
                  "conversion_rate": _rate(converting, sessions)},
        "estimated": ranking.estimated or sessions_sampled,
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


def revenue_by_source(site: Site, period: Period) -> list[dict[str, Any]]:
    """Net revenue per (currency, traffic source) through the attribution join (module doc)."""
    payments = _payments(site.id, period)
    p = payments.c
    since = period.start - timedelta(days=ATTRIBUTION_LOOKBACK_DAYS)
    page_views, entries = _entries(site, since, period.end)
    e = entries.c
    visits = (Select([entries], [e.session_id, e.started_at,
                                 fn.COALESCE(e.utm_source, e.referrer).alias("source")])
              .cte("visits"))
    v = visits.c
    user_sessions = (Event.select(Event.user_id.alias("user_id"),
                                  Event.session_id.alias("session_id")).distinct()
                     .where((Event.site_id == site.id) & (Event.occurred_at >= since)
                            & (Event.occurred_at < period.end)
                            & Event.user_id.in_(Select([payments], [p.user_id]))
                            & Event.session_id.is_null(False))
                     .cte("user_sessions"))
    us = user_sessions.c
    named = Select([payments.join(visits, on=(v.session_id == p.session_id))],
                   [p.id.alias("payment"), v.source, v.started_at, Value(0).alias("priority")])
    identified = Select(
        [payments.join(user_sessions, on=(us.user_id == p.user_id))
         .join(visits, on=((v.session_id == us.session_id) & (v.started_at <= p.paid_at)))],
        [p.id, v.source, v.started_at, Value(1)])
    candidates = (named + identified).cte("candidates")
    c = candidates.c
    choice = fn.ROW_NUMBER().over(partition_by=[c.payment],
                                  order_by=[c.priority, c.started_at.desc()])
    ranked = Select([candidates], [c.payment, c.source, choice.alias("choice")]).cte("ranked")
    r = ranked.c
    query = (Select([payments.join(ranked, JOIN.LEFT_OUTER,
                                   on=((r.payment == p.id) & (r.choice == 1)))],
                    [p.currency, r.source, *_money_columns(p.amount)])
             .group_by(p.currency, r.source)
             .with_cte(payments, page_views, entries, visits, user_sessions, candidates, ranked))
    rows = [{"source": row["source"] or UNATTRIBUTED, "currency": row["currency"],
             **_money_row(row)} for row in _fetch(query)]
    rows.sort(key=lambda row: (row["currency"], -row["net_minor"], row["source"]))
    return rows


def _money_row(row: dict[str, Any]) -> dict[str, Any]:
    currency = row["currency"]
    gross, refunded, net = (int(row[name] or 0) for name in ("gross", "refunded", "net"))
    return {"gross_minor": gross, "gross": _money(gross, currency),
            "refunds_minor": -refunded, "refunds": _money(-refunded, currency),
            "net_minor": net, "net": _money(net, currency),
            "orders": int(row["orders"] or 0), "refund_count": int(row["refunds"] or 0)}


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


def _top_per_currency(rows: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """At most `limit` sources per currency; the rest summed as '(other sources)'."""
    kept: list[dict[str, Any]] = []
    others: dict[str, dict[str, Any]] = {}
    seen: dict[str, int] = {}
    for row in rows:
        currency = row["currency"]
        seen[currency] = seen.get(currency, 0) + 1
        if seen[currency] <= limit:
            kept.append(row)
            continue
        other = others.setdefault(currency, {"source": "(other sources)", "currency": currency,
                                             "gross_minor": 0, "refunds_minor": 0,
                                             "net_minor": 0, "orders": 0, "refund_count": 0})
        for name in ("gross_minor", "refunds_minor", "net_minor", "orders", "refund_count"):
            other[name] += row[name]
    for other in others.values():
        for name in ("gross", "refunds", "net"):
            other[name] = _money(other[f"{name}_minor"], other["currency"])
        kept.append(other)
    kept.sort(key=lambda row: row["currency"])  # stable: each currency keeps its order
    return kept


def _p75(samples: Any, keys: list[str], ctes: tuple[Any, ...], join: Any = None,
         on: Any = None) -> list[dict[str, Any]]:
    """Weighted nearest-rank p75 of `samples` (columns page, metric, value, w) per `keys`."""
    s = samples.c
    partition = [getattr(s, key) for key in keys]
    source = samples if join is None else samples.join(join, on=on)
    ranked = (Select([source], [*partition, s.value,
                                fn.SUM(s.w).over(partition_by=partition, order_by=[s.value],
                                                 start=Window.preceding(),
                                                 end=Window.CURRENT_ROW, frame_type=Window.ROWS)
                                .alias("running"),
                                fn.SUM(s.w).over(partition_by=partition).alias("total")])
              .cte("running_weights"))
    r = ranked.c
    grouping = [getattr(r, key) for key in keys]
    return _fetch(Select([ranked], [*grouping,
                                    fn.MIN(Case(None, [(r.running >= r.total * 0.75, r.value)]))
                                    .alias("p75"), fn.MAX(r.total).alias("samples")])
                  .group_by(*grouping).with_cte(*ctes, ranked))


def _rating(metric: str, value: float) -> str:
    good, poor = VITAL_THRESHOLDS[metric]
    return "good" if value <= good else "needs improvement" if value <= poor else "poor"


def web_vitals(site_id: int, period: Period, limit: int) -> dict[str, Any]:
    metric = _json_text(Event.properties, "metric")
    value = _json_number(Event.properties, "value")
    samples = (Event.select(_url_path(Event.page_url).alias("page"), metric.alias("metric"),
                            value.alias("value"), Event.weight.alias("w"))
               .where(_events(site_id, period, "performance") & metric.in_(VITALS)
                      & value.is_null(False)).cte("vital_samples"))
    s = samples.c
    top = (Select([samples], [s.page.alias("top_page"), fn.SUM(s.w).alias("n")])
           .group_by(s.page).order_by(SQL("n").desc(), _bytewise(s.page)).limit(limit)
           .cte("top_pages"))
    per_page = _p75(samples, ["page", "metric"], (samples, top), join=top,
                    on=(top.c.top_page == s.page))
    site_wide = _p75(samples, ["metric"], (samples,))
    sampled = _fetch(Select([samples], [_sampled(s.w).alias("sampled")]).with_cte(samples))
    pages: dict[str, dict[str, Any]] = {}
    for row in per_page:
        page = pages.setdefault(row["page"], {"page": row["page"], "samples": 0,
                                              **dict.fromkeys(VITALS)})
        page[row["metric"]] = float(row["p75"])
        page["samples"] += _count(row["samples"])
    return {
        "site": {metric: None for metric in VITALS} | {
            row["metric"]: {"p75": float(row["p75"]), "samples": _count(row["samples"]),
                            "rating": _rating(row["metric"], float(row["p75"]))}
            for row in site_wide},
        "pages": sorted(pages.values(), key=lambda page: (-page["samples"], page["page"])),
        "estimated": bool(sampled[0]["sampled"]),
    }


def errors(site_id: int, period: Period, limit: int) -> dict[str, Any]:
    message = fn.COALESCE(fn.NULLIF(_json_text(Event.properties, "message"), ""), NO_MESSAGE)
    rows = (Event.select(message.alias("message"), Event.session_id.alias("session"),
                         Event.weight.alias("w"), Event.occurred_at.alias("at"))
            .where(_events(site_id, period, "error")).cte("error_events"))
    ranking = _ranked(rows, "message", "session", limit, latest=True)
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
    crawlers = _fetch(CrawlHit.select(CrawlHit.crawler, CrawlHit.category, hits.alias("hits"),
                                      fn.SUM(_when(CrawlHit.verified, 1)).alias("verified"),
                                      fn.SUM(_when(CrawlHit.spoofed, 1)).alias("spoofed"),
                                      fn.MAX(CrawlHit.received_at).alias("last_seen"))
                      .where(where).group_by(CrawlHit.crawler, CrawlHit.category)
                      .order_by(SQL("hits").desc(), _bytewise(CrawlHit.crawler),
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
        "crawlers": [{"crawler": row["crawler"] or UNKNOWN_CRAWLER, "category": row["category"],
                      "hits": int(row["hits"]), "verified": int(row["verified"] or 0),
                      "spoofed": int(row["spoofed"] or 0),
                      "last_seen": _timestamp(row["last_seen"])} for row in crawlers],
        "top_paths": [{"path": row["path"], "hits": int(row["hits"]),
                       "crawlers": int(row["crawlers"])} for row in paths],
        "estimated": False,
    }


def _stored_per_day(model: Any, site_id: int, period: Period) -> dict[str, int]:
    day = database.truncate_date("day", model.received_at)
    rows = _fetch(model.select(day.alias("day"), fn.COUNT(model.id).alias("n"))
                  .where((model.site_id == site_id) & period.covers(model.received_at))
                  .group_by(day))
    return {_day(row["day"]): int(row["n"]) for row in rows}


INGEST_COUNTS = ("events_stored", "server_events_stored", "crawl_hits_stored", "sampled_away",
                 "duplicate_batches", "bot_filtered", "rejected_total")
_TALLY_COLUMNS = {SAMPLED: "sampled_away", DUPLICATE: "duplicate_batches", BOT: "bot_filtered"}


def ingest_health(site_id: int, period: Period) -> dict[str, Any]:
    stored = {"events_stored": _stored_per_day(Event, site_id, period),
              "server_events_stored": _stored_per_day(ServerEvent, site_id, period),
              "crawl_hits_stored": _stored_per_day(CrawlHit, site_id, period)}
    tallies = _fetch(IngestTally.select(IngestTally.day, IngestTally.reason,
                                        fn.SUM(IngestTally.count).alias("n"))
                     .where((IngestTally.site_id == site_id)
                            & IngestTally.day.between(period.first, period.last))
                     .group_by(IngestTally.day, IngestTally.reason))
    days: dict[str, dict[str, Any]] = {}

    def day_row(day: str) -> dict[str, Any]:
        return days.setdefault(day, {"date": day, **dict.fromkeys(INGEST_COUNTS, 0),
                                     "rejected": {}})

    for column, per_day in stored.items():
        for day, count in per_day.items():
            day_row(day)[column] = count
    for row in tallies:
        entry, count = day_row(_day(row["day"])), int(row["n"])
        if row["reason"] in _TALLY_COLUMNS:
            entry[_TALLY_COLUMNS[row["reason"]]] += count
        else:
            entry["rejected"][row["reason"]] = entry["rejected"].get(row["reason"], 0) + count
            entry["rejected_total"] += count
    listed = [days[day] for day in sorted(days)]
    totals: dict[str, Any] = {name: sum(entry[name] for entry in listed)
                              for name in INGEST_COUNTS}
    totals["rejected"] = {}
    for entry in listed:
        for reason, count in entry["rejected"].items():
            totals["rejected"][reason] = totals["rejected"].get(reason, 0) + count
    return {"days": listed, "totals": totals, "estimated": False}

