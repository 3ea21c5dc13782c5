"""Money in `query` (vocabulary.MONEY_METRICS): the trusted server events of the period, each
credited to a visit exactly as get_revenue credits it (app.analytics.revenue.attributed), summed
per row of the visit:* dimensions of that visit (no visit: the null row) and time:* buckets of
the payment's time, in one currency. Filters select the payments whose credited visit they
select; an event:* filter selects the visits with a matching event in the period (as
has_done). Figures are exact: the stored minor units, made major units at the end."""
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from peewee import JOIN, Select

from app.analytics.errors import ArgumentError
from app.analytics.events import fetch
from app.analytics.filters import Done, Filters, bind_site, compile_filters, kinds
from app.analytics.local_time import bucket_text
from app.analytics.period import Period
from app.analytics.period_rows import VISITOR_TYPE, typed_visits
from app.analytics.query.arguments import Query
from app.analytics.query.figures import Figures
from app.analytics.query.plan_shape import grouped_by, keys_of, visit_columns
from app.analytics.revenue import attributed, money_columns
from app.analytics.vocabulary import MONEY_METRICS, Row
from app.revenue.money import MoneyError, currency_exponent, to_major_units
from models import Site


def money_filters(filters: Filters) -> Filters:
    """`filters` as filters on the credited visits: an event:* node becomes has_done."""
    found = []
    for node in filters:
        node_kinds = kinds((node,))
        if node_kinds == {"event"}:
            found.append(Done("has_done", node))
        elif "event" in node_kinds:
            raise ArgumentError("With money metrics a filter node is on visit:* or on "
                                "event:* dimensions, not both; give them as separate filters.")
        else:
            found.append(node)
    return tuple(found)


def _visits(site: Site, chosen: Any, columns: list[str]) -> tuple[list[Any], Any]:
    """(the CTEs it needs, the CTE) of the credited visits (one row each): their visit:*
    `columns`, carried in `chosen` from the visit table (`attributed`)."""
    r = chosen.c
    rest = [column for column in columns if column != VISITOR_TYPE]
    base = (Select([chosen], [r.visit_session.alias("session_id"), r.visitor.alias("visitor"),
                              *[getattr(r, column).alias(column) for column in rest]])
            .where(r.choice == 1).distinct())  # a visit credited with two payments: one row
    if VISITOR_TYPE not in columns:
        return [], base.cte("money_visits")
    base = base.cte("money_visits_base")
    return typed_visits(site, [], base, ["session_id", "visitor", *rest], "money_visits")


def _rows(site: Site, period: Period, query: Query) -> list[dict[str, Any]]:
    """The money sums (`net`, `orders`) per (currency, dimension values)."""
    filters = bind_site(money_filters(query.filters), site.id)
    columns = sorted(visit_columns(query.dimensions, filters))
    payments, ctes, chosen = attributed(
        site, period, ["visitor", *(column for column in columns if column != VISITOR_TYPE)])
    p, r = payments.c, chosen.c
    built, visits = _visits(site, chosen, columns)
    v = visits.c
    keys = keys_of(query.dimensions)
    values = [d.sql(Row(None, v, period, time=p.paid_at)).alias(key)
              for key, d in zip(keys, query.dimensions, strict=True)]
    found = (Select([payments], [p.currency.alias("currency"), *values,
                                 *money_columns(p.amount)])
             .join(chosen, JOIN.LEFT_OUTER, on=((r.payment == p.id) & (r.choice == 1)))
             .join(visits, JOIN.LEFT_OUTER, on=(v.session_id == r.visit_session)))
    condition = compile_filters(filters, Row(None, v, period))
    if condition is not None:
        found = found.where(v.session_id.is_null(False) & condition)
    found = found.group_by(p.currency, *grouped_by(keys)).with_cte(*ctes, *built, visits)
    return fetch(found)


def _currency(rows: list[dict[str, Any]], asked: str | None) -> str | None:
    """The currency asked for, else the period's only one; an ArgumentError listing them."""
    found = sorted({row["currency"] for row in rows})
    if asked is not None:
        try:
            currency_exponent(asked)
        except MoneyError:
            raise ArgumentError(f"Invalid currency {asked!r}: give an ISO 4217 code"
                                + (f" ({', '.join(found)} in the period)." if found else ".")
                                ) from None
        return asked
    if len(found) > 1:
        raise ArgumentError(f"The period holds payments in {', '.join(found)}: give "
                            "`currency` (one of them).")
    return found[0] if found else None


def _figures(net: int, orders: int, currency: str | None) -> dict[str, Any]:
    if currency is None:
        return {"total_revenue": 0, "orders": 0, "average_revenue": None}
    total = to_major_units(net, currency)
    average = None
    if orders:
        step = Decimal(1).scaleb(-currency_exponent(currency))
        average = (total / orders).quantize(step, rounding=ROUND_HALF_UP)
    return {"total_revenue": _number(total), "orders": orders,
            "average_revenue": None if average is None else _number(average)}


def _number(value: Decimal) -> int | float:
    """A JSON number written as the decimal is: 68.99, JPY 500."""
    return int(value) if value == value.to_integral_value() and value.as_tuple().exponent >= 0 \
        else float(value)


def money_figures(site: Site, period: Period, query: Query) -> tuple[Figures, str | None]:
    """The money metrics per row and in all, and the currency they are in."""
    found = _rows(site, period, query)
    currency = _currency(found, query.currency)
    units = [d.name.split(":", 1)[1] if d.kind == "time" else None for d in query.dimensions]
    rows, net, orders = [], 0, 0
    for row in found:
        if row["currency"] != currency:
            continue
        row_net, row_orders = int(row["net"] or 0), int(row["orders"] or 0)
        net, orders = net + row_net, orders + row_orders
        key = tuple(bucket_text(unit, row[k]) if unit else row[k]
                    for unit, k in zip(units, keys_of(query.dimensions), strict=True))
        rows.append({"key": key, **_figures(row_net, row_orders, currency), "sums": {}})
    return Figures(rows, _figures(net, orders, currency), len(rows), False, False), currency


def is_money(query: Query) -> bool:
    return any(name in MONEY_METRICS for name in query.metrics)
