"""Traffic: entry page views and sources, events counted, overview, top pages and sources, goals."""
from datetime import datetime
from typing import Any

from peewee import (
    JOIN,
    Case,
    Select,
    Value,
    fn,
)

from app.analytics.base import (
    MAX_DAYS,
    Period,
    as_count,
    fetch,
    is_sampled,
    rate,
    top_keys,
    when,
)
from app.analytics.filters import parse_filters
from app.analytics.period_rows import type_sums, visits_cte
from app.analytics.query import Query, read_figures
from app.analytics.vocabulary import dimension
from app.sql import json_text, query_param, url_host
from models import Event, Site

HEARTBEAT_SECONDS = 15
DIRECT = "(direct)"


def _site_domain(site: Site) -> str:
    domain = site.domain.lower()
    return domain[4:] if domain.startswith("www.") else domain


def session_entries(site: Site, since: datetime, until: datetime,
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
                                    p.url, json_text(p.properties, "utm_source")
                                    .alias("utm_property")])
              .where(p.entry_order == 1).cte("first_page_views"))
    f = firsts.c
    # Hosts and URL parameters are derived once per distinct referrer / URL (see url_pages).
    host = url_host(f.referrer)
    domain = _site_domain(site)
    own = host.is_null() | (host == domain) | host.endswith(f".{domain}")
    referrers = (Select([firsts], [f.referrer, Case(None, [(own, DIRECT)], host)
                                   .alias("source")]).group_by(f.referrer).cte("referrers"))
    url_utm = (Select([firsts], [f.url, query_param(f.url, "utm_source").alias("utm_source")])
               .group_by(f.url).cte("url_utm"))
    r, q = referrers.c, url_utm.c
    entries = (Select([firsts.join(referrers, JOIN.LEFT_OUTER, on=(r.referrer == f.referrer))
                       .join(url_utm, JOIN.LEFT_OUTER, on=(q.url == f.url))],
                      [f.session_id, f.visitor, f.w, is_sampled(f.w).alias("sampled"),
                       f.started_at, fn.COALESCE(r.source, DIRECT).alias("referrer"),
                       fn.COALESCE(fn.NULLIF(f.utm_property, ""), q.utm_source)
                       .alias("utm_source")])
               .cte("entries"))
    return page_views, firsts, referrers, url_utm, entries


def count_events(site: Site, period: Period, limit: int, type_: str | None = None,
                 name: str | None = None) -> dict[str, Any]:
    """Events per local day and per name, on the `query` compiler: `events` by `time:day` and
    by `event:name` (named events only), filtered by type and name."""
    filters = parse_filters([*([["is", "event:type", [type_]]] if type_ else []),
                             *([["is", "event:name", [name]]] if name is not None else [])])
    daily = read_figures(site, period, Query(("events",), (dimension("time:day"),), filters, (),
                                             MAX_DAYS))
    named = read_figures(site, period, Query(
        ("events",), (dimension("event:name"),),
        (*filters, *parse_filters([["is_not", "event:name", [None]]])), (), limit))
    return {
        "type": type_, "name": name, "count": daily.totals["events"],
        "stored_events": daily.totals["stored"],
        "by_day": [{"date": row["key"][0], "count": row["events"]} for row in daily.rows],
        "by_name": [{"name": row["key"][0], "count": row["events"]}
                    for row in named.rows[:limit]],
        "estimated": daily.estimated,
    }


def overview(site: Site, period: Period) -> dict[str, Any]:
    """Visitors, sessions (the period's visits: app.analytics.period_rows.visits_cte), bounces
    and engaged time from the visits, and the events by type from the quarter-hour counts."""
    built, visits = visits_cte(site, period, {"heartbeats", "bounced"})
    v = visits.c
    per_visitor = (Select([visits], [
        v.visitor, fn.MAX(v.w).alias("w"), fn.SUM(v.w).alias("sessions"),
        fn.SUM(v.bounced * v.w).alias("bounces"), fn.SUM(v.heartbeats).alias("heartbeats"),
        fn.MAX(is_sampled(v.w)).alias("sampled")]).group_by(v.visitor).cte("per_visitor"))
    p = per_visitor.c
    totals = fetch(Select([per_visitor], [
        fn.SUM(when(p.visitor.is_null(False), p.w)).alias("visitors"),
        *[fn.SUM(getattr(p, name)).alias(name) for name in ("sessions", "bounces",
                                                             "heartbeats")],
        fn.MAX(p.sampled).alias("sampled")]).with_cte(*built, visits, per_visitor))[0]
    weights, sampled = type_sums(site, period)
    session_count = float(totals["sessions"] or 0)
    engaged = HEARTBEAT_SECONDS * float(totals["heartbeats"] or 0)
    events = {name: as_count(weight) for name, weight in weights.items() if as_count(weight)}
    return {
        "visitors": as_count(totals["visitors"]), "sessions": as_count(session_count),
        "pageviews": events.get("pageview", 0),
        "bounced_sessions": as_count(totals["bounces"]),
        "bounce_rate": rate(float(totals["bounces"] or 0), session_count),
        "engaged_seconds": round(engaged),
        "avg_engaged_seconds": round(engaged / session_count, 1) if session_count else None,
        "events_by_type": dict(sorted(events.items(), key=lambda item: (-item[1], item[0]))),
        "estimated": bool(totals["sampled"]) or sampled,
    }


def top_pages(site: Site, period: Period, limit: int) -> dict[str, Any]:
    """On the `query` compiler: `pageviews` and `visitors` by `event:page`, page views only."""
    pages = read_figures(site, period, Query(
        ("pageviews", "visitors"), (dimension("event:page"),),
        parse_filters([["is", "event:type", ["pageview"]]]), (), limit))
    return {
        "pages": [{"page": row["key"][0], "pageviews": row["pageviews"],
                   "visitors": row["visitors"]} for row in pages.rows[:limit]],
        "total_pageviews": pages.totals["pageviews"], "distinct_pages": pages.total_rows,
        "estimated": pages.estimated,
    }


def top_sources(site: Site, period: Period, limit: int) -> dict[str, Any]:
    *ctes, entries = session_entries(site, period.start, period.end)
    e = entries.c
    rows = (Select([entries], [Value("referrer").alias("dim"), e.referrer.alias("key"),
                               e.visitor.alias("unit"), e.w, e.w.alias("uw"), e.sampled])
            + Select([entries], [Value("utm"), e.utm_source, e.visitor, e.w, e.w, e.sampled])
            .where(e.utm_source.is_null(False))).cte("sources")
    ranked = top_keys(rows, {"referrer": limit, "utm": limit}, ctes=(*ctes, entries))
    return {
        "sessions": ranked["referrer"].total,
        "referrers": [{"source": row["key"], "sessions": row["count"], "visitors": row["units"]}
                      for row in ranked["referrer"].rows],
        "utm_sources": [{"utm_source": row["key"], "sessions": row["count"],
                         "visitors": row["units"]} for row in ranked["utm"].rows],
        "estimated": ranked["referrer"].estimated,
    }


def goal_conversions(site: Site, period: Period, limit: int,
                     goal: str | None = None) -> dict[str, Any]:
    """On the `query` compiler: goal events (`events`) and the visits with one (`visits`) by
    `event:goal`, over all the period's visits."""
    goals = parse_filters([["is", "event:type", ["goal"]],
                           *([["is", "event:goal", [goal]]] if goal is not None else [])])
    converting = read_figures(site, period, Query(("events", "visits"),
                                                  (dimension("event:goal"),), goals, (), limit))
    visits = read_figures(site, period, Query(("visits",), (), (), ()))
    sessions = visits.totals["visits"]
    return {
        "sessions": sessions,
        "goals": [{"goal": row["key"][0], "conversions": row["events"],
                   "converting_sessions": row["visits"],
                   "conversion_rate": rate(row["visits"], sessions)}
                  for row in converting.rows[:limit]],
        "total": {"conversions": converting.totals["events"],
                  "converting_sessions": converting.totals["visits"],
                  "conversion_rate": rate(converting.totals["visits"], sessions)},
        "estimated": converting.estimated or visits.estimated,
    }
