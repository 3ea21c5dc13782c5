"""The SQL of one statement: a plan's rows (`selected`) aggregated per row of the dimensions
and, unless only the rows are wanted, over everything (the totals), into the sums the metrics
read (vocabulary.SUMS), `sampled` and `total_rows`.

`selected` has one row per (dimension values, session): a visit's figures are on each of its
rows once. Visitors need one aggregate per (row, visitor) first, for the visitor's weight,
summed per row by a second; the other sums need one aggregate per row. When the rows are the
visits and the database has GROUPING SETS, rows and totals are one pass; otherwise two
aggregates over the same rows (`grand` 0: a row, 1: the totals), UNION ALL.
"""
from dataclasses import replace
from typing import Any

from peewee import SQL, Case, EnclosedNodeList, NodeList, Select, Value, fn

from app.analytics.filters import bind_site
from app.analytics.period import Period
from app.analytics.query.arguments import GOAL, Query
from app.analytics.query.plan import choose_plan
from app.analytics.query.plan_shape import keys_of, needed_sums
from app.analytics.vocabulary import SUMS, VISIT_FIGURES, Dimension
from app.storage.dialect import has_grouping_sets
from models import Site

ROW_CAP = 100_000  # grouped rows read per statement; beyond, a warning says the rest was cut
EVENT_SUMS = ("events", "pageviews")
# a visit's sums, from its weight `vw` and its figures in `selected` (vocabulary.VISIT_FIGURES)
VISIT_SUMS = (("visits", "vw"), *((figure.sums, figure.selected) for figure in VISIT_FIGURES))


def _goals_only(source: Any, keys: list[str], dimensions: tuple[Dimension, ...]) -> Any:
    """event:goal rows are the goals: no row for the events that are not one."""
    condition: Any = True
    for key, d in zip(keys, dimensions, strict=True):
        if d.name == GOAL:
            condition &= getattr(source.c, key).is_null(False)
    return condition


def statement(site: Site, period: Period, query: Query, dimensions: tuple[Dimension, ...],
              keep: Any = None, rows_only: bool = False) -> Select:
    """Per row of `dimensions` (and, unless `rows_only`, over everything: the totals): the
    SUMS the metrics need, `sampled` and `total_rows`; filter leaves for which `keep` is false
    left out (conversion_rate's denominator)."""
    keep = keep or (lambda _leaf: True)
    query = replace(query, filters=bind_site(query.filters, site.id))
    plan = choose_plan(site, period, query, dimensions, keep, rows_only)
    keys = keys_of(dimensions)
    needed = needed_sums(query.metrics)
    ctes = list(plan.ctes)
    selected = plan.selected
    s = selected.c
    by_visitor = plan.has_visits and "visitors" in needed
    in_visit = s.vid.is_null(False) if plan.has_visits else None
    sums = {} if plan.visit_rows else {name: fn.SUM(getattr(s, name)) for name in EVENT_SUMS
                                       if name in needed}
    if plan.has_visits:
        for name, column in VISIT_SUMS:
            value = s.vw if name == "visits" else getattr(s, column) * s.vw
            if name in needed:
                sums[name] = fn.SUM(Case(None, [(in_visit, value)], 0))
    if by_visitor:
        sums["w"] = fn.MAX(Case(None, [(in_visit, s.vw)]))
    row_keys = [getattr(s, key) for key in keys]
    visitor = [s.visitor] if by_visitor else []

    def aggregate_of(grand: Any, columns: list[Any]) -> Select:
        return Select([selected], [grand.alias("grand"), *columns, *visitor,
                                   *[total.alias(name) for name, total in sums.items()],
                                   fn.MAX(s.sampled).alias("sampled")])

    def first(grand: int) -> Select:
        """The first aggregate of `selected`, per row (grand 0) or over everything (1)."""
        if grand == 1:
            found = aggregate_of(Value(1), [Value(None).alias(key) for key in keys])
            return found.group_by(*visitor) if visitor else found
        where = _goals_only(selected, keys, dimensions)
        if any(d.kind == "visit" for d in dimensions):  # events outside visits: no row
            where &= in_visit
        return aggregate_of(Value(0), row_keys).where(where).group_by(*row_keys, *visitor)

    grands = [0] if rows_only else [0, 1] if keys else [1]
    if len(grands) == 2 and plan.visit_rows and has_grouping_sets():
        # both levels at once: the rows are visits, every one in a row
        sets = EnclosedNodeList([EnclosedNodeList([*row_keys, *visitor]),
                                 EnclosedNodeList(visitor)])
        aggregate = aggregate_of(fn.GROUPING(row_keys[0]), row_keys).group_by(
            NodeList((SQL("GROUPING SETS"), sets)))
    else:
        aggregate = first(grands[0])
        for grand in grands[1:]:
            aggregate += first(grand)
    aggregate = aggregate.cte("first")
    ctes.append(aggregate)
    combined = _parts(plan, aggregate, sums, keys, dimensions, grands, by_visitor).cte("parts")
    ctes.append(combined)
    c = combined.c
    groups = [c.grand, *[getattr(c, key) for key in keys]]
    final = (Select([combined], [c.grand, *[getattr(c, key).alias(key) for key in keys],
                                 *[fn.SUM(getattr(c, name)).alias(name) for name in SUMS],
                                 fn.MAX(c.sampled).alias("sampled"),
                                 fn.COUNT(SQL("*")).over(partition_by=[c.grand])
                                 .alias("total_rows")])
             .group_by(*groups)
             .order_by(c.grand.desc(), fn.SUM(c.events).desc(), fn.SUM(c.visits).desc())
             .limit(ROW_CAP + 1))
    return final.with_cte(*ctes)


def _parts(plan: Any, aggregate: Any, sums: dict[str, Any], keys: list[str],
           dimensions: tuple[Dimension, ...], grands: list[int], by_visitor: bool) -> Select:
    """The first aggregate's rows (per row of visitors summed, when by visitor) and the events'
    own sums of a plan whose rows are visits, as rows of SUMS."""
    a = aggregate.c

    def part(source: Any, totals: dict[str, Any], sampled: Any, where: Any = True,
             grand: Any = None) -> Select:
        c = source.c
        columns = [getattr(c, key) for key in keys]
        return Select([source], [
            (c.grand if grand is None else Value(grand)).alias("grand"),
            *(columns if grand != 1 else [Value(None).alias(key) for key in keys]),
            *[totals.get(name, Value(0)).alias(name) for name in SUMS],
            sampled.alias("sampled")]).where(where)

    if by_visitor and grands == [1]:
        # The totals alone: one aggregate, no GROUP BY. Grouped by the constant `grand`, the
        # planner expected 200 groups and sorted every visitor's row for one (a Sort and a
        # GroupAggregate of 253,862 rows at 10 M events). Over no visitor it is a row of nulls,
        # which the metrics read as nothing counted (vocabulary.figures), as they read no row.
        parts = part(aggregate, _visitor_sums(a, sums), fn.MAX(a.sampled), grand=1)
    elif by_visitor:  # per row, the visitors' sums
        parts = part(aggregate, _visitor_sums(a, sums), fn.MAX(a.sampled)).group_by(
            a.grand, *[getattr(a, key) for key in keys])
    else:
        parts = part(aggregate, {name: getattr(a, name) for name in sums}, a.sampled)
    if 1 in grands and plan.event_totals is not None:
        t = plan.event_totals.c
        parts += part(plan.event_totals, {"events": t.events, "pageviews": t.pageviews},
                      t.sampled, grand=1)
    if 0 in grands and plan.event_rows is not None:
        r = plan.event_rows.c
        parts += part(plan.event_rows, {"events": fn.SUM(r.events),
                                        "pageviews": fn.SUM(r.pageviews)}, fn.MAX(r.sampled),
                      _goals_only(plan.event_rows, keys, dimensions), grand=0).group_by(
            *[getattr(r, key) for key in keys])
    return parts


def _visitor_sums(a: Any, sums: dict[str, Any]) -> dict[str, Any]:
    """The sums of the first aggregate's (row, visitor) rows, and each visitor's weight summed:
    the visitors."""
    return {**{name: fn.SUM(getattr(a, name)) for name in sums if name != "w"},
            "visitors": fn.SUM(Case(None, [(a.visitor.is_null(False), a.w)], 0))}
