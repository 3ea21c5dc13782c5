"""Revenue per currency from trusted server events, and its attribution to the visit it came
from: by that visit's `visit:source` and `visit:channel`, as `query` defines them (the visit
table's entry columns, stored at ingest)."""
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from peewee import (
    JOIN,
    Select,
    Value,
    fn,
)

from app.analytics.events import event_scope, fetch, when
from app.analytics.period import Period
from app.revenue.money import MoneyError, to_major_units
from models import Event, ServerEvent, Site, Visit

ATTRIBUTION_LOOKBACK_DAYS = 30
UNATTRIBUTED = "(unattributed)"
OTHERS = {"source": "(other sources)", "channel": "(other channels)"}
ATTRIBUTED = ("net_minor", "net", "orders")  # of a money row, what a source is credited


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


MONEY_SUMS = ("gross", "refunded", "net", "orders", "refunds")


def money_columns(amount: Any) -> list[Any]:
    """The money sums (MONEY_SUMS) of payments' `amount` (minor units, a refund negative): the
    one definition get_revenue and query's money metrics (app.analytics.query.money) read."""
    return [fn.SUM(when(amount > 0, amount)).alias("gross"),
            fn.SUM(when(amount < 0, amount)).alias("refunded"),
            fn.SUM(amount).alias("net"),
            fn.SUM(when(amount > 0, 1)).alias("orders"),
            fn.SUM(when(amount < 0, 1)).alias("refunds")]


def _money_row(row: dict[str, Any]) -> dict[str, Any]:
    currency = row["currency"]
    gross, refunded, net = (int(row[name] or 0) for name in ("gross", "refunded", "net"))
    return {"gross_minor": gross, "gross": _money(gross, currency),
            "refunds_minor": -refunded, "refunds": _money(-refunded, currency),
            "net_minor": net, "net": _money(net, currency),
            "orders": int(row["orders"] or 0), "refund_count": int(row["refunds"] or 0)}


def attributed(site: Site, period: Period, columns: Sequence[str] = ()) -> Any:
    """(the payments CTE, the CTEs, the last: `chosen`): per payment (`payment`, its id) the
    visit it is credited to (app/analytics/__init__.py, "Attribution"), with that visit's
    session id (`visit_session`), `source`, `channel` and the visit table's `columns`; `choice`
    1 is the credited one. The columns come along from the one read of the candidate visits:
    read again by session id, PostgreSQL misjudged how few they are and sorted the whole visit
    table (revenue by visit:utm_campaign 1.3 s at 10 M events, 0.4 s carried)."""
    payments = _payments(site.id, period)
    p = payments.c
    lookback = period.moved(period.first - timedelta(days=ATTRIBUTION_LOOKBACK_DAYS),
                            period.last)
    since = lookback.start
    user_sessions = (Event.select(Event.user_id.alias("user_id"),
                                  Event.session_id.alias("session_id")).distinct()
                     .where(event_scope(site.id, lookback)
                            & Event.user_id.in_(Select([payments], [p.user_id]))
                            & Event.session_id.is_null(False))
                     .cte("user_sessions"))
    us = user_sessions.c
    linked = (Select([user_sessions], [us.session_id])
              | Select([payments], [p.session_id]).where(p.session_id.is_null(False)))
    extra = [column for column in columns if column not in ("source", "channel")]
    visits = (Visit.select(Visit.session_id.alias("session_id"),
                           Visit.entry_at.alias("entry_at"), Visit.source.alias("source"),
                           Visit.channel.alias("channel"),
                           *[getattr(Visit, column).alias(column) for column in extra])
              .where((Visit.site_id == site.id) & (Visit.pageviews > 0)
                     & (Visit.entry_at >= since) & (Visit.entry_at < period.end)
                     & Visit.session_id.in_(linked))
              .cte("linked_visits"))
    v = visits.c
    carried = [getattr(v, column) for column in extra]
    named = Select([payments.join(visits, on=(v.session_id == p.session_id))],
                   [p.id.alias("payment"), v.source, v.channel, v.entry_at,
                    v.session_id.alias("visit_session"), Value(0).alias("priority"), *carried])
    identified = Select(
        [payments.join(user_sessions, on=(us.user_id == p.user_id))
         .join(visits, on=((v.session_id == us.session_id) & (v.entry_at <= p.paid_at)))],
        [p.id, v.source, v.channel, v.entry_at, v.session_id, Value(1), *carried])
    candidates = (named + identified).cte("candidates")
    c = candidates.c
    choice = fn.ROW_NUMBER().over(partition_by=[c.payment],
                                  order_by=[c.priority, c.entry_at.desc()])
    chosen = Select([candidates], [c.payment, c.source, c.channel, c.visit_session,
                                   *[getattr(c, column) for column in extra],
                                   choice.alias("choice")]).cte("chosen")
    return payments, [payments, user_sessions, visits, candidates, chosen], chosen


def credited(site: Site, period: Period) -> list[dict[str, Any]]:
    """The period's money sums (`money_columns`) per (currency, source, channel) of the visit
    credited, in one statement; None for the payments no visit is credited with."""
    payments, ctes, chosen = attributed(site, period)
    p, r = payments.c, chosen.c
    return fetch(Select([payments.join(chosen, JOIN.LEFT_OUTER,
                                       on=((r.payment == p.id) & (r.choice == 1)))],
                        [p.currency, r.source, r.channel, *money_columns(p.amount)])
                 .group_by(p.currency, r.source, r.channel).with_cte(*ctes))


def _summed(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    """The money sums of `rows` per value of `keys` (None as 0)."""
    summed: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        at = tuple(row[key] for key in keys)
        total = summed.setdefault(at, {**dict(zip(keys, at, strict=True)),
                                       **dict.fromkeys(MONEY_SUMS, 0)})
        for name in MONEY_SUMS:
            total[name] += int(row[name] or 0)
    return list(summed.values())


def revenue_by(rows: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """Revenue per (currency, the credited visit's `key`: source or channel) of `credited`'s
    rows; the payments no visit is credited with under UNATTRIBUTED."""
    found = [{key: row[key] or UNATTRIBUTED, "currency": row["currency"],
              **{name: money[name] for name in ATTRIBUTED}}
             for row in _summed(rows, ("currency", key)) for money in [_money_row(row)]]
    found.sort(key=lambda row: (row["currency"], -row["net_minor"], row[key]))
    return found


def revenue(site: Site, period: Period, limit: int) -> dict[str, Any]:
    rows = credited(site, period)
    per_currency = sorted(_summed(rows, ("currency",)), key=lambda row: row["currency"])
    return {
        "currencies": [{"currency": row["currency"], **_money_row(row)} for row in per_currency],
        **{f"by_{key}": _top_per_currency(revenue_by(rows, key), key, limit)
           for key in ("source", "channel")},
        "estimated": False,
    }


def _top_per_currency(rows: list[dict[str, Any]], key: str,
                      limit: int) -> list[dict[str, Any]]:
    """At most `limit` values of `key` per currency; the rest summed under OTHERS[key]."""
    kept: list[dict[str, Any]] = []
    others: dict[str, dict[str, Any]] = {}
    listed: dict[str, int] = {}
    for row in rows:
        currency = row["currency"]
        listed[currency] = listed.get(currency, 0) + 1
        if listed[currency] <= limit:
            kept.append(row)
            continue
        other = others.setdefault(currency, {key: OTHERS[key], "currency": currency,
                                             "net_minor": 0, "orders": 0})
        other["net_minor"] += row["net_minor"]
        other["orders"] += row["orders"]
    for other in others.values():
        other["net"] = _money(other["net_minor"], other["currency"])
        kept.append(other)
    kept.sort(key=lambda row: row["currency"])  # stable: each currency keeps its order
    return kept
