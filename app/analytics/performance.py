"""The Standard-plan types: web vitals (p75 per page) and JavaScript errors."""
import operator
from functools import reduce
from typing import Any

from peewee import (
    JOIN,
    SQL,
    Expression,
    Select,
    Value,
    fn,
)

from app.analytics import percentile
from app.analytics.events import event_filter, event_rows, fetch, is_sampled, when
from app.analytics.numbers import as_count
from app.analytics.period import Period
from app.analytics.ranking import top_keys
from app.storage.dialect import (
    bytewise,
    in_partial_indexes,
    json_number,
    json_text,
    text_size,
    url_path,
)
from models import Event

VITALS = ("lcp", "inp", "cls", "fcp", "ttfb")
# Google's thresholds (good up to the first, poor above the second).
VITAL_THRESHOLDS = {"lcp": (2500, 4000), "inp": (200, 500), "cls": (0.1, 0.25),
                    "fcp": (1800, 3000), "ttfb": (800, 1800)}
# Column names, per metric, in the rows that `_per_level` returns.
P75_OF = {name: f"{name}_p75" for name in VITALS}
SAMPLES_OF = {name: f"{name}_samples" for name in VITALS}
NO_MESSAGE = "(no message)"
# Migration 0012's bounds: an event_vitals entry (a B-tree's limit is 2,704 bytes) holds the
# properties (as JSONB: up to 4 times their text) and the URL.
INDEXED_PROPERTIES_BYTES = 400
INDEXED_URL_BYTES = 800


def _rating(metric: str, value: float) -> str:
    good, poor = VITAL_THRESHOLDS[metric]
    return "good" if value <= good else "needs improvement" if value <= poor else "poor"


def _vital_events(site_id: int, period: Period) -> Any:
    """CTE: the period's performance events (url, w, sampled) with a column per metric: its value
    when the event carries it as a JSON number, else NULL. Read three times (top pages, the
    site's p75s, the top pages'), so PostgreSQL materializes it once.

    PostgreSQL reads it from migration 0012's partial indexes, apart
    (app.storage.dialect.in_partial_indexes): the events whose index entry fits
    (`_index_entry_sizes`) from event_vitals, which also holds each metric's value, so neither the
    table nor the JSON is read (several times faster at 10 M events: bench/README.md,
    "Analytics: the ten kept MCP tools"); the others from event_long_vitals and the table. The
    conditions and `json_number` are spelled as in the indexes: the planner matches them as
    written (tests/analytics/test_performance.py checks the plan)."""
    # All five metrics come out of one read of each event's JSON (a select per metric read it
    # five times). Events without any metric are skipped by the readers (`_carries_any`): a
    # filter here would extract every metric a second time.
    columns = [Event.page_url.alias("url"), Event.weight.alias("w"),
               is_sampled(Event.weight).alias("sampled"),
               *[json_number(Event.properties, name).alias(name) for name in VITALS]]
    performance = event_filter(site_id, period, "performance")
    return in_partial_indexes(lambda part: Event.select(*columns).where(performance & part),
                              *_index_entry_sizes()).cte("vital_events")


def _index_entry_sizes() -> tuple[Expression, Expression]:
    """Migration 0012's conditions on an event's sizes: its properties and URL fit an
    event_vitals entry; they do not (events without properties are in neither index: they carry
    no metric)."""
    properties = text_size(Event.properties)
    url = fn.octet_length(fn.COALESCE(Event.page_url, ""))
    return ((properties <= INDEXED_PROPERTIES_BYTES) & (url <= INDEXED_URL_BYTES),
            (properties > INDEXED_PROPERTIES_BYTES) | (url > INDEXED_URL_BYTES))


def url_pages(source: Any, name: str) -> Any:
    """CTE (url, page): the page path of each distinct `url` of `source`. Deriving it after the
    GROUP BY runs the string functions once per URL instead of once per event."""
    url = source.c.url
    return Select([source], [url, url_path(url).alias("page")]).group_by(url).cte(name)


def _carries(events: Any, name: str) -> Expression:
    return getattr(events.c, name).is_null(False)


def _carries_any(events: Any) -> Expression:
    return reduce(operator.or_, [_carries(events, name) for name in VITALS])


def _top_pages(events: Any, limit: int) -> tuple[Any, Any, tuple[Any, ...]]:
    """CTEs: the `limit` pages with the most samples (page, page_no: 1 for the most), their URLs
    (url, page_no), and all the CTEs needed."""
    e = events.c
    samples_per_event = reduce(operator.add, [when(_carries(events, name), 1) for name in VITALS])
    per_url = (Select([events], [e.url, fn.SUM(e.w * samples_per_event).alias("n")])
               .where(_carries_any(events)).group_by(e.url).cte("vital_urls"))
    pages = url_pages(per_url, "vital_pages")
    u, g = per_url.c, pages.c
    page_order = fn.ROW_NUMBER().over(order_by=[fn.SUM(u.n).desc(), bytewise(g.page)])
    top = (Select([per_url.join(pages, on=(g.url == u.url))],
                  [g.page, page_order.alias("page_no")])
           .group_by(g.page).order_by(SQL("page_no")).limit(limit).cte("top_pages"))
    t = top.c
    top_urls = (Select([pages.join(top, on=(t.page == g.page))], [g.url, t.page_no])
                .cte("top_urls"))
    return top, top_urls, (per_url, pages, top, top_urls)


def _per_level(events: Any, top: Any, top_urls: Any) -> tuple[Select, tuple[Any, ...]]:
    """Rows whole_site, page_no, page, each metric's p75 and weighted samples (`P75_OF`,
    `SAMPLES_OF`; NULL without samples), sampled: one for the whole site and one per top page;
    and the CTEs needed.

    The site's row and the top pages' are two aggregates: the site's needs no sort by page, and
    the pages below the top ones are not aggregated at all, which took PostgreSQL less time
    than GROUPING SETS ((), page) over every page (measured: bench/README.md, "Analytics: the
    ten kept MCP tools"). What is left is mostly percentile_cont's sorts of every sample, for
    the site and for the top pages."""
    e, u, t = events.c, top_urls.c, top.c
    aggregates = []
    for name in VITALS:
        carried = _carries(events, name)
        aggregates += [percentile.percentile_cont(getattr(e, name), carried).alias(P75_OF[name]),
                       fn.SUM(e.w).filter(carried).alias(SAMPLES_OF[name])]
    sampled = fn.MAX(e.sampled).alias("sampled")
    site = (Select([events], [Value(True).alias("whole_site"), Value(None).alias("page_no"),
                              *aggregates, sampled])
            .where(_carries_any(events)))
    pages = (Select([events.join(top_urls, on=(u.url == e.url))],
                    [Value(False), u.page_no, *aggregates, sampled])
             .where(_carries_any(events)).group_by(u.page_no))
    levels = (site + pages).cte("vital_levels")
    # The page joins after the aggregation, so that the sort compares integers only.
    v = levels.c
    columns = [v.whole_site, v.page_no, *[getattr(v, column) for name in VITALS
                                           for column in (P75_OF[name], SAMPLES_OF[name])]]
    return (Select([levels.join(top, JOIN.LEFT_OUTER, on=(t.page_no == v.page_no))],
                   [*columns, v.sampled, t.page]), (levels,))


def web_vitals(site_id: int, period: Period, limit: int) -> dict[str, Any]:
    events = _vital_events(site_id, period)
    top, top_urls, top_ctes = _top_pages(events, limit)
    query, level_ctes = _per_level(events, top, top_urls)
    found = fetch(query.with_cte(events, *top_ctes, *level_ctes))
    site_wide: dict[str, Any] = dict.fromkeys(VITALS)
    listed: dict[int, dict[str, Any]] = {}
    for row in found:
        measured = {name: (float(row[P75_OF[name]]), as_count(row[SAMPLES_OF[name]]))
                    for name in VITALS if row[P75_OF[name]] is not None}
        if row["whole_site"]:
            site_wide.update({name: {"p75": p75, "samples": count, "rating": _rating(name, p75)}
                              for name, (p75, count) in measured.items()})
            continue
        listed[row["page_no"]] = {
            "page": row["page"], "samples": sum(count for _, count in measured.values()),
            **{name: measured[name][0] if name in measured else None for name in VITALS}}
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
