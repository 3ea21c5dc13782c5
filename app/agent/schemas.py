"""The agent's tool arguments and results as marshmallow schemas: the JSON Schemas agents see
in `tools/list` (inputSchema, outputSchema) are generated from them."""
from collections.abc import Callable
from typing import Any

from marshmallow import Schema, fields, validate

from app.analytics import base, performance
from app.crawlers.user_agents import BOT_CATEGORIES
from app.fields import StrictInteger
from models.event import EVENT_TYPES

# --- Arguments ---------------------------------------------------------------------------


class PeriodArgs(Schema):
    """`from`/`to` or `period`; the tool resolves them in the site's time zone
    (base.resolve_period), since only the site knows its zone and its today."""

    from_ = fields.Date(data_key="from", metadata={
        "description": "First local day, inclusive (YYYY-MM-DD). Default: 29 days before `to`."})
    to = fields.Date(metadata={"description": "Last local day, inclusive (YYYY-MM-DD). "
                                              "Default: today."})
    period = fields.String(metadata={
        "description": "Instead of from/to: days ending today in the site's time zone.",
        "enum": list(base.PERIODS)})


class ListArgs(PeriodArgs):
    limit = StrictInteger(load_default=10, validate=validate.Range(1, 100),
                          metadata={"description": "How many rows to list (1-100)."})


class CountArgs(ListArgs):
    type = fields.String(validate=validate.OneOf(EVENT_TYPES),
                         metadata={"description": "Only events of this type."})
    name = fields.String(validate=validate.Length(1, 128), metadata={
        "description": "Only events with this name (custom events, goals)."})


class GoalArgs(ListArgs):
    goal = fields.String(validate=validate.Length(1, 128),
                         metadata={"description": "Only this goal."})


class CrawlerArgs(ListArgs):
    category = fields.String(validate=validate.OneOf(BOT_CATEGORIES),
                             metadata={"description": "Only crawlers of this category."})


# --- Results -----------------------------------------------------------------------------

def _int(**kwargs: Any) -> fields.Integer:
    return fields.Integer(required=True, **kwargs)


def _str(**kwargs: Any) -> fields.String:
    return fields.String(required=True, **kwargs)


def _list(schema: type[Schema]) -> fields.List:
    return fields.List(fields.Nested(schema), required=True)


def _rate() -> fields.Float:
    return fields.Float(required=True, allow_none=True, metadata={
        "description": "A fraction (0.25 = 25%); null when there is nothing to divide by."})


class Result(Schema):
    site = _str(metadata={"description": "The domain of the key's site."})
    from_ = _str(data_key="from")
    to = _str()
    timezone = fields.String(metadata={
        "description": "The site's IANA time zone of the days, when it is not UTC."})
    estimated = fields.Boolean(required=True, metadata={
        "description": "True when sampled data is behind the figures: they are scaled by the "
                       "stored sampling weights and are estimates."})
    warnings = fields.List(fields.String(), metadata={
        "description": "What the figures may lack, e.g. events of the last seconds."})


class DayCount(Schema):
    date = _str()
    count = _int()


class NameCount(Schema):
    name = _str()
    count = _int()


class CountResult(Result):
    type = fields.String(required=True, allow_none=True)
    name = fields.String(required=True, allow_none=True)
    count = _int(metadata={"description": "Events, scaled by sampling weights."})
    stored_events = _int(metadata={"description": "Rows actually stored."})
    by_day = _list(DayCount)
    by_name = _list(NameCount)


class OverviewResult(Result):
    visitors = _int()
    sessions = _int()
    pageviews = _int()
    bounced_sessions = _int()
    bounce_rate = _rate()
    engaged_seconds = _int()
    avg_engaged_seconds = fields.Float(required=True, allow_none=True)
    events_by_type = fields.Dict(keys=fields.String(), values=fields.Integer(), required=True)


class PageRow(Schema):
    page = _str()
    pageviews = _int()
    visitors = _int()


class PagesResult(Result):
    pages = _list(PageRow)
    total_pageviews = _int()
    distinct_pages = _int()


class ReferrerRow(Schema):
    source = _str()
    sessions = _int()
    visitors = _int()


class UtmRow(Schema):
    utm_source = _str()
    sessions = _int()
    visitors = _int()


class SourcesResult(Result):
    sessions = _int()
    referrers = _list(ReferrerRow)
    utm_sources = _list(UtmRow)


class Conversions(Schema):
    conversions = _int()
    converting_sessions = _int()
    conversion_rate = _rate()


class GoalRow(Conversions):
    goal = _str()


class GoalsResult(Result):
    sessions = _int()
    goals = _list(GoalRow)
    total = fields.Nested(Conversions, required=True)


class Money(Schema):
    currency = _str()
    gross_minor = _int(metadata={"description": "Integer minor units (cents)."})
    gross = fields.String(required=True, allow_none=True,
                          metadata={"description": "Major units, exact decimal."})
    refunds_minor = _int()
    refunds = fields.String(required=True, allow_none=True)
    net_minor = _int()
    net = fields.String(required=True, allow_none=True)
    orders = _int()
    refund_count = _int()


class SourceMoney(Money):
    source = _str()


class RevenueResult(Result):
    currencies = _list(Money)
    by_source = _list(SourceMoney)


class Vital(Schema):
    p75 = fields.Float(required=True)
    samples = _int()
    rating = _str(validate=validate.OneOf(("good", "needs improvement", "poor")))


def _vitals_of(field: Callable[[], fields.Field]) -> dict[str, fields.Field]:
    return {metric: field() for metric in performance.VITALS}


SiteVitals = Schema.from_dict(
    _vitals_of(lambda: fields.Nested(Vital, required=True, allow_none=True)), name="SiteVitals")
PageVitals = Schema.from_dict(
    {"page": _str(), "samples": _int(),
     **_vitals_of(lambda: fields.Float(required=True, allow_none=True))}, name="PageVitals")


class VitalsResult(Result):
    site_vitals = fields.Nested(SiteVitals, required=True)
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
    verified = _int(metadata={"description": "Hits whose source network was verified."})
    spoofed = _int(metadata={"description": "Hits claiming a crawler they did not come from."})
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
    sampled_away = _int(metadata={"description": "Events dropped by quota sampling."})
    duplicate_batches = _int(metadata={"description": "Resent batches, stored once."})
    bot_filtered = _int(metadata={"description": "Browser requests from bots, not stored."})
    rejected_total = _int(metadata={"description": "Requests refused, all reasons."})
    rejected = fields.Dict(keys=fields.String(), values=fields.Integer(), required=True,
                           metadata={"description": "Refused requests per reason."})


class IngestDay(IngestCounts):
    date = _str()


class IngestResult(Result):
    days = _list(IngestDay)
    totals = fields.Nested(IngestCounts, required=True)
