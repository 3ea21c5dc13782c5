"""Revenue per currency from trusted server events, and its attribution to traffic sources."""
from datetime import timedelta
from typing import Any

from peewee import (
    JOIN,
    Select,
    Value,
    fn,
)

from app.analytics.base import Period, fetch, when
from app.analytics.traffic import session_entries
from app.revenue.money import MoneyError, to_major_units
from models import Event, ServerEvent, Site

ATTRIBUTION_LOOKBACK_DAYS = 30
UNATTRIBUTED = "(unattributed)"
OTHER_SOURCES = "(other sources)"


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


def revenue_by_source(site: Site, period: Period) -> list[dict[str, Any]]:
    """Revenue per (currency, traffic source) through the attribution join
    (app/analytics/__init__.py, "Attribution")."""
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
    *entry_ctes, entries = session_entries(site, since, period.end, sessions=linked)
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
             **_money_row(row)} for row in fetch(query)]
    rows.sort(key=lambda row: (row["currency"], -row["net_minor"], row["source"]))
    return rows


def revenue(site: Site, period: Period, limit: int) -> dict[str, Any]:
    payments = _payments(site.id, period)
    per_currency = fetch(Select([payments], [payments.c.currency,
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
