"""The Standard-plan types: web vitals (p75 per page) and JavaScript errors."""
import operator
from functools import reduce
from typing import Any

from peewee import (
    JOIN,
    SQL,
    Case,
    EnclosedNodeList,
    NodeList,
    Select,
    Value,
    fn,
)

from app.analytics.base import (
    Period,
    as_count,
    event_filter,
    event_rows,
    fetch,
    is_sampled,
    top_keys,
    url_pages,
)
from app.analytics.sql import bytewise, json_number, json_text
from app.db import is_postgres
from models import Event

VITALS = ("lcp", "inp", "cls", "fcp", "ttfb")
# Google's thresholds (good up to the first, poor above the second).
VITAL_THRESHOLDS = {"lcp": (2500, 4000), "inp": (200, 500), "cls": (0.1, 0.25),
                    "fcp": (1800, 3000), "ttfb": (800, 1800)}
NO_MESSAGE = "(no message)"
P75 = 0.75


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


def _vital_samples(site_id: int, period: Period) -> tuple[Any, Any]:
    """CTEs: the period's performance events, and one sample (url, metric_no, value, w, sampled)
    per metric that an event carries under its spec name as a JSON number."""
    events = (Event.select(Event.page_url.alias("url"), Event.properties.alias("properties"),
                           Event.weight.alias("w"), is_sampled(Event.weight).alias("sampled"))
              .where(event_filter(site_id, period, "performance")).cte("vital_events"))
    e = events.c
    per_metric = []
    # Metrics travel as small integers so that sorting compares numbers, not text.
    for number, name in enumerate(VITALS):
        value = json_number(e.properties, name)
        per_metric.append(Select([events], [e.url, Value(number).alias("metric_no"),
                                            value.alias("value"), e.w, e.sampled])
                          .where(value.is_null(False)))
    return events, reduce(operator.add, per_metric).cte("vital_samples")


def web_vitals(site_id: int, period: Period, limit: int) -> dict[str, Any]:
    events, samples = _vital_samples(site_id, period)
    s = samples.c
    per_url = (Select([samples], [s.url, fn.SUM(s.w).alias("n")]).group_by(s.url)
               .cte("vital_urls"))
    pages = url_pages(per_url, "vital_pages")
    u, g = per_url.c, pages.c
    page_order = fn.ROW_NUMBER().over(order_by=[fn.SUM(u.n).desc(), bytewise(g.page)])
    top = (Select([per_url.join(pages, on=(g.url == u.url))],
                  [g.page, page_order.alias("page_no")])
           .group_by(g.page).order_by(SQL("page_no")).limit(limit).cte("top_pages"))
    t = top.c
    top_urls = (Select([pages.join(top, on=(t.page == g.page))], [g.url, t.page_no])
                .cte("top_urls"))
    query, more_ctes = _site_and_page_p75(samples, top, top_urls)
    found = fetch(query.with_cte(events, samples, per_url, pages, top, top_urls, *more_ctes))
    site_wide: dict[str, Any] = dict.fromkeys(VITALS)
    listed: dict[int, dict[str, Any]] = {}
    for row in found:
        name, p75, count = VITALS[row["metric_no"]], float(row["p75"]), as_count(row["samples"])
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
    message = fn.COALESCE(fn.NULLIF(json_text(Event.properties, "message"), ""), NO_MESSAGE)
    rows = event_rows(event_filter(site_id, period, "error"), "message", message, Event.session_id,
                       at=True).cte("error_events")
    ranking = top_keys(rows, {"message": limit}, latest=True)["message"]
    return {
        "errors": [{"message": row["key"], "occurrences": row["count"], "sessions": row["units"],
                    "last_seen": row["latest"]} for row in ranking.rows],
        "total_errors": ranking.total, "distinct_messages": ranking.keys,
        "estimated": ranking.estimated,
    }
