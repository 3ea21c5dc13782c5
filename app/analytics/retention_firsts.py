"""Retention's sums for its most asked table in one ordered pass: first-visit cohorts, a return
being any visit, no filters, over a range that reaches the current interval (the default:
this week and the seven before). The definitions are retention's (app.analytics.retention);
this is another way to read them, chosen there only when both give the same table:

- with no filters, the visits that place a visitor are every visit of the range; a visitor
  whose first visit egis holds lies in the range has no visit across the range's start, and no
  visit crosses its end (the current interval's end is still to come), so its visits are its
  visit rows (models.Visit), whole;
- a member of cohort C is a visitor whose first visit lies in C, weighing the largest weight of
  its visits in C; it is back in interval B when one of its visits lies in B.

So every visit of the site with a page view is read once, in the order of the index
visit_first_visits (visitor, then start; migration 0022 includes each visit's weight and
storage-free mark, so the read is the index alone): each visit carries its visitor's first
start (a window over the visitor, in the index's order: no sort), the visits of the visitors
first seen in the range are grouped per visitor and interval (already in visitor order: an
incremental sort of each visitor's few rows), each carries its visitor's member weight (a
second window, in the same order), and the table's sums are grouped from those rows. Read as
retention's general statement reads it (the range's visits grouped per visitor and interval,
hashed, joined to every visitor's first visit, then to the returns), a weekly retention at
10 M events took 1.7 s; this read takes 0.8 s (bench/README.md). SQLite, without the index,
sorts the visits by visitor: 98,000 of them in a fraction of what its general statement took.
"""
from typing import Any

from peewee import Case, Select, fn

from app.analytics.events import fetch
from app.analytics.local_time import time_bucket
from app.analytics.period import Period
from app.storage.dialect import wide
from models import Site, Visit


def sums(site: Site, cohorts: Period, interval: str) -> list[dict[str, Any]]:
    """The rows (kind, cohort, back, w, sampled) that retention._sums gives for first-visit
    cohorts over `cohorts`, a return being any visit, no filters."""
    first = fn.MIN(Visit.started_at).over(partition_by=[Visit.visitor])
    visits = (Visit.select(Visit.visitor, Visit.started_at, wide(Visit.weight).alias("w"),
                           Case(None, [(Visit.storage_free, 1)], 0).alias("storage_free"),
                           first.alias("first"))
              .where((Visit.site_id == site.id) & (Visit.pageviews > 0)
                     & Visit.visitor.is_null(False))
              .cte("visitor_visits"))
    v = visits.c
    cohort = time_bucket(interval, v.first, cohorts)
    back = time_bucket(interval, v.started_at, cohorts)
    intervals = (Select([visits], [v.visitor, cohort.alias("cohort"), back.alias("back"),
                                   fn.MAX(v.w).alias("w"),
                                   fn.MAX(v.storage_free).alias("storage_free")])
                 .where((v.first >= cohorts.start) & (v.first < cohorts.end))
                 .group_by(v.visitor, cohort, back).cte("visitor_intervals"))
    i = intervals.c
    own = i.back == i.cohort  # the member's own interval: its weight and mark
    member_weight = fn.MAX(Case(None, [(own, i.w)])).over(partition_by=[i.visitor])
    weighted = Select([intervals], [
        i.cohort, i.back, member_weight.alias("w"), Case(None, [(own, 1)], 0).alias("own"),
        Case(None, [(own, i.storage_free)], 0).alias("storage_free")]).alias("weighted")
    w = weighted.c
    cells = (Select([weighted], [w.cohort.alias("cohort"), w.back.alias("back"),
                                 fn.SUM(w.w).alias("w"),
                                 fn.MAX(Case(None, [((w.own == 1) & (w.w != 1), 1)], 0))
                                 .alias("sampled"),
                                 fn.SUM(Case(None, [(w.storage_free == 1, w.w)], 0))
                                 .alias("free")])
             .group_by(w.cohort, w.back).with_cte(visits, intervals))
    return _kinds(fetch(cells))


def _kinds(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of retention._sums from the cells: every member is back in its own interval,
    so a cohort's size is that cell, and its storage-free members are there."""
    rows = []
    for cell in cells:
        if cell["back"] == cell["cohort"]:
            rows.append({**cell, "kind": "size"})
        rows.append({**cell, "kind": "cell"})
    rows.append({"kind": "free", "w": sum(float(cell["free"]) for cell in cells)})
    return rows
