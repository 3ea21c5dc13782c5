"""The agent's tool arguments and results as marshmallow schemas: the JSON Schemas agents see
in `tools/list` (inputSchema, outputSchema) are generated from them (app.agent.catalogue makes
them compact: the catalogue is read before every conversation)."""
from typing import Any

from marshmallow import Schema, fields, validate

from app.analytics import performance
from app.crawlers.user_agents import BOT_CATEGORIES
from app.web.schema import StrictInteger

# --- Arguments ---------------------------------------------------------------------------


class PeriodArgs(Schema):
    """`from`/`to` or `period`; the tool resolves them in the site's time zone
    (app.analytics.period.resolve_period, whose error lists the valid periods), since only the
    site knows its zone and its today. The server's instructions list the periods once for
    every tool."""

    from_ = fields.Date(data_key="from")
    to = fields.Date()
    period = fields.String()


class ListArgs(PeriodArgs):
    limit = StrictInteger(load_default=10, validate=validate.Range(1, 100))


class CrawlerArgs(ListArgs):
    category = fields.String(validate=validate.OneOf(BOT_CATEGORIES))


# --- Results -----------------------------------------------------------------------------

def _int(**kwargs: Any) -> fields.Integer:
    return fields.Integer(required=True, **kwargs)


def _str(**kwargs: Any) -> fields.String:
    return fields.String(required=True, **kwargs)


def _list(schema: type[Schema]) -> fields.List:
    return fields.List(fields.Nested(schema), required=True)


def _maybe(field: type[fields.Field]) -> fields.Field:
    return field(required=True, allow_none=True)


class Result(Schema):
    site = _str()
    from_ = _str(data_key="from")
    to = _str()
    timezone = fields.String()
    estimated = fields.Boolean(required=True)
    warnings = fields.List(fields.String())


class OverviewResult(Result):
    visitors = _int()
    visits = _int()
    pageviews = _int()
    bounce_rate = _maybe(fields.Float)
    visit_duration = _maybe(fields.Integer)
    events_by_type = fields.Dict(keys=fields.String(), values=fields.Integer(), required=True)


class Money(Schema):
    currency = _str()
    gross_minor = _int()
    gross = _maybe(fields.String)
    refunds_minor = _int()
    refunds = _maybe(fields.String)
    net_minor = _int()
    net = _maybe(fields.String)
    orders = _int()
    refund_count = _int()


class Attributed(Schema):
    """Revenue credited to one source or channel: its net, as Money has it."""

    currency = _str()
    net_minor = _int()
    net = _maybe(fields.String)
    orders = _int()


class SourceMoney(Attributed):
    source = _str()


class ChannelMoney(Attributed):
    channel = _str()


class RevenueResult(Result):
    currencies = _list(Money)
    by_source = _list(SourceMoney)
    by_channel = _list(ChannelMoney)


class Vital(Schema):
    p75 = fields.Float(required=True)
    samples = _int()
    rating = _str()


PageVitals = Schema.from_dict(
    {"page": _str(), "samples": _int(),
     **{metric: _maybe(fields.Float) for metric in performance.VITALS}}, name="PageVitals")


class VitalsResult(Result):
    # an object per metric of performance.VITALS (null without samples): one schema for all
    site_vitals = fields.Dict(keys=fields.String(),
                              values=fields.Nested(Vital, allow_none=True), required=True)
    pages = _list(PageVitals)


class ErrorRow(Schema):
    message = _str()
    occurrences = _int()
    sessions = _int()
    last_seen = _str()


class ErrorsResult(Result):
    errors = _list(ErrorRow)
    total_errors = _int()
    distinct_messages = _int()


class CategoryRow(Schema):
    category = _str()
    hits = _int()


class CrawlerRow(Schema):
    crawler = _str()
    category = _str()
    hits = _int()
    verified = _int()
    spoofed = _int()
    last_seen = _str()


class PathRow(Schema):
    path = _str()
    hits = _int()
    crawlers = _int()


class CrawlersResult(Result):
    total_hits = _int()
    categories = _list(CategoryRow)
    crawlers = _list(CrawlerRow)
    top_paths = _list(PathRow)


class IngestCounts(Schema):
    events_stored = _int()
    server_events_stored = _int()
    crawl_hits_stored = _int()
    sampled_away = _int()
    duplicate_batches = _int()
    duplicate_orders = _int()
    duplicate_idempotency_keys = _int()
    bot_filtered = _int()
    rejected_total = _int()
    rejected = fields.Dict(keys=fields.String(), values=fields.Integer(), required=True)


class IngestDay(IngestCounts):
    date = _str()


class IngestResult(Result):
    days = _list(IngestDay)
    totals = fields.Nested(IngestCounts, required=True)
