"""POST /api/mcp: the agent endpoint, MCP over Streamable HTTP, with the analytics tools.

Only a server key of the site may call it (a write key gets 403, no key 401), and every tool
reads that key's site alone. The JSON-RPC layer is app.mcp_protocol; the queries, and the
definitions of visitor, session, bounce and the rest, are app.analytics. This module holds the
tool catalogue: each tool's arguments and result as marshmallow schemas (the JSON Schemas agents
see come from them) and its short text rendering.
"""
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from flask import Blueprint, Response, g, request
from marshmallow import Schema, ValidationError, fields, post_load, validate
from werkzeug.exceptions import RequestEntityTooLarge

from app.analytics import base, crawlers, ingest_health, performance, revenue, traffic
from app.auth import require_key
from app.bodies import raw_body
from app.crawlers.user_agents import BOT_CATEGORIES
from app.errors import MESSAGES, ApiError, format_validation_messages, render
from app.limits import MCP as MCP_LIMIT
from app.limits import limited
from app.mcp_protocol import McpServer, Tool, ToolError, ToolOutput
from app.openapi import API_VERSION, documented
from app.validation import json_schema_of
from models import Site
from models.api_key import SERVER
from models.event import EVENT_TYPES
from models.site import utcnow

bp = Blueprint("mcp", __name__)

DEFAULT_DAYS = 30


# --- Arguments ----------------------------------------------------------------------------

class PeriodArgs(Schema):
    from_ = fields.Date(data_key="from", metadata={
        "description": "First UTC day, inclusive (YYYY-MM-DD). Default: 29 days before `to`."})
    to = fields.Date(metadata={"description": "Last UTC day, inclusive (YYYY-MM-DD). "
                                              "Default: today."})

    @post_load
    def period(self, data: dict[str, Any], **_kwargs: Any) -> dict[str, Any]:
        last = data.pop("to", None) or utcnow().date()
        first = data.pop("from_", None) or last - timedelta(days=DEFAULT_DAYS - 1)
        if first > last:
            raise ValidationError(f"`from` ({first}) is after `to` ({last}).", "from")
        if (last - first).days >= base.MAX_DAYS:
            raise ValidationError(f"The period spans more than {base.MAX_DAYS} days; "
                                  "ask for a year at most per call.", "from")
        return {**data, "period": base.Period(first, last)}


class ListArgs(PeriodArgs):
    limit = fields.Integer(strict=True, load_default=10, validate=validate.Range(1, 100),
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


# --- Results ------------------------------------------------------------------------------

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
    estimated = fields.Boolean(required=True, metadata={
        "description": "True when sampled data is behind the figures: they are scaled by the "
                       "stored sampling weights and are estimates."})


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


# --- Text renderings ----------------------------------------------------------------------

def _n(value: float | None) -> str:
    return "-" if value is None else f"{value:,}"


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.1%}"


def _head(result: dict[str, Any], title: str) -> str:
    note = " (estimated: sampled data, scaled by weights)" if result["estimated"] else ""
    return f"{title} for {result['site']}, {result['from']} to {result['to']}{note}"


def _lines(rows: list[dict[str, Any]], line: Callable[[dict[str, Any]], str],
           empty: str = "  (none)") -> list[str]:
    return [f"  {number}. {line(row)}" for number, row in enumerate(rows, 1)] or [empty]


def _render_count(r: dict[str, Any]) -> str:
    what = " ".join(part for part in (r["type"], r["name"] and f"'{r['name']}'") if part)
    days = ", ".join(f"{day['date']}: {_n(day['count'])}" for day in r["by_day"])
    return "\n".join([_head(r, f"{what or 'All'} events"),
                      f"{_n(r['count'])} events ({_n(r['stored_events'])} stored)",
                      f"Per day: {days or 'none'}", "By name:",
                      *_lines(r["by_name"], lambda row: f"{row['name']}: {_n(row['count'])}")])


def _render_overview(r: dict[str, Any]) -> str:
    engaged = r["avg_engaged_seconds"]
    return "\n".join([
        _head(r, "Overview"),
        f"{_n(r['visitors'])} visitors, {_n(r['sessions'])} sessions, {_n(r['pageviews'])} "
        f"page views; bounce rate {_pct(r['bounce_rate'])}; average engaged time "
        f"{'-' if engaged is None else f'{engaged:.0f} s'}",
        "Events by type: " + (", ".join(f"{name} {_n(count)}" for name, count
                                        in r["events_by_type"].items()) or "none")])


def _render_pages(r: dict[str, Any]) -> str:
    return "\n".join([_head(r, "Top pages"),
                      f"{_n(r['total_pageviews'])} page views over {_n(r['distinct_pages'])} "
                      "pages",
                      *_lines(r["pages"], lambda row: f"{row['page']}: {_n(row['pageviews'])} "
                                                      f"views, {_n(row['visitors'])} visitors")])


def _render_sources(r: dict[str, Any]) -> str:
    def line(key: str) -> Callable[[dict[str, Any]], str]:
        return lambda row: (f"{row[key]}: {_n(row['sessions'])} sessions, "
                            f"{_n(row['visitors'])} visitors")
    return "\n".join([_head(r, "Top sources"), f"{_n(r['sessions'])} sessions. Referrers:",
                      *_lines(r["referrers"], line("source")), "UTM sources:",
                      *_lines(r["utm_sources"], line("utm_source"))])


def _conversion(row: dict[str, Any]) -> str:
    return (f"{_n(row['conversions'])} conversions, {_n(row['converting_sessions'])} converting "
            f"sessions, rate {_pct(row['conversion_rate'])}")


def _render_goals(r: dict[str, Any]) -> str:
    return "\n".join([_head(r, "Goal conversions"),
                      f"{_n(r['sessions'])} sessions; all goals: {_conversion(r['total'])}",
                      *_lines(r["goals"], lambda row: f"{row['goal']}: {_conversion(row)}")])


def _money(row: dict[str, Any]) -> str:
    return (f"net {row['net']} {row['currency']} ({_n(row['orders'])} orders, gross "
            f"{row['gross']}, {_n(row['refund_count'])} refunds of {row['refunds']})")


def _render_revenue(r: dict[str, Any]) -> str:
    return "\n".join([_head(r, "Revenue"), *_lines(r["currencies"], _money),
                      "By traffic source (the session of the paying user):",
                      *_lines(r["by_source"], lambda row: f"{row['source']}: {_money(row)}")])


def _render_vitals(r: dict[str, Any]) -> str:
    site = ", ".join(f"{metric} {vital['p75']:g} ({vital['rating']})"
                     for metric, vital in r["site_vitals"].items() if vital)
    return "\n".join([_head(r, "Web vitals, p75 (ms; CLS unitless)"),
                      f"Whole site: {site or 'no samples'}",
                      *_lines(r["pages"], lambda row: f"{row['page']} ({_n(row['samples'])} "
                              "samples): " + ", ".join(f"{metric} {row[metric]:g}" for metric
                                                       in performance.VITALS
                                                       if row[metric] is not None))])


def _render_errors(r: dict[str, Any]) -> str:
    return "\n".join([_head(r, "Errors"), f"{_n(r['total_errors'])} errors, "
                                          f"{_n(r['distinct_messages'])} distinct messages",
                      *_lines(r["errors"], lambda row: f"{row['message'][:200]}: "
                              f"{_n(row['occurrences'])} times in {_n(row['sessions'])} "
                              f"sessions, last {row['last_seen']}")])


def _render_crawlers(r: dict[str, Any]) -> str:
    categories = ", ".join(f"{row['category']} {_n(row['hits'])}" for row in r["categories"])
    return "\n".join([_head(r, "Crawler activity"),
                      f"{_n(r['total_hits'])} hits: {categories or 'none'}", "Crawlers:",
                      *_lines(r["crawlers"], lambda row: f"{row['crawler']} ({row['category']}"
                              f"): {_n(row['hits'])} hits, {_n(row['verified'])} verified, "
                              f"{_n(row['spoofed'])} spoofed, last {row['last_seen']}"),
                      "Top paths:", *_lines(r["top_paths"], lambda row: f"{row['path']}: "
                                            f"{_n(row['hits'])} hits by {_n(row['crawlers'])} "
                                            "crawlers")])


def _ingest_line(row: dict[str, Any]) -> str:
    rejected = ", ".join(f"{reason} {_n(count)}"
                         for reason, count in sorted(row["rejected"].items()))
    return (f"stored {_n(row['events_stored'])} events, {_n(row['server_events_stored'])} "
            f"server events, {_n(row['crawl_hits_stored'])} crawl hits; sampled away "
            f"{_n(row['sampled_away'])}, duplicate batches {_n(row['duplicate_batches'])}, bots "
            f"{_n(row['bot_filtered'])}, rejected {_n(row['rejected_total'])}"
            + (f" ({rejected})" if rejected else ""))


def _render_ingest(r: dict[str, Any]) -> str:
    return "\n".join([_head(r, "Ingest health"), "Total: " + _ingest_line(r["totals"]),
                      *[f"  {day['date']}: {_ingest_line(day)}" for day in r["days"]]])


# --- The catalogue ------------------------------------------------------------------------

Run = Callable[[Site, base.Period, dict[str, Any]], dict[str, Any]]


def _tool(name: str, title: str, description: str, args: type[Schema], result: type[Schema],
          run: Run, render: Callable[[dict[str, Any]], str]) -> Tool:
    loader = args()

    def handler(site: Site, arguments: dict[str, Any]) -> ToolOutput:
        try:
            loaded = loader.load(arguments)
        except ValidationError as error:
            raise ToolError(f"Invalid arguments for {name}: "
                            f"{format_validation_messages(error.messages)}") from None
        period = loaded.pop("period")
        with base.reading():
            found = run(site, period, loaded)
        structured = {"site": site.domain, "from": period.first.isoformat(),
                      "to": period.last.isoformat(), **found}
        return ToolOutput(structured, render(structured))

    return Tool(name, title, description, json_schema_of(args), json_schema_of(result), handler)


PERIOD_NOTE = (" Dates are UTC days, `from` and `to` inclusive, the last 30 days by default. "
               "Figures from sampled data (a site over its quota) are scaled by the sampling "
               "weights and flagged `estimated`.")

TOOLS = [
    _tool("count_events", "Count events",
          "Count events, optionally of one type (pageview, click, form_submit, scroll, "
          "performance, custom, goal, error, heartbeat) and/or one name, per day and per name."
          + PERIOD_NOTE, CountArgs, CountResult,
          lambda site, period, a: traffic.count_events(site.id, period, a["limit"],
                                                         a.get("type"), a.get("name")),
          _render_count),
    _tool("get_overview", "Traffic overview",
          "Visitors (distinct anonymous ids), sessions (with at least one page view), page "
          "views, bounce rate (sessions with one page view and no click, form submit, custom "
          "event, goal or heartbeat), average engaged time (15 s per heartbeat, per session) "
          "and events by type." + PERIOD_NOTE, PeriodArgs, OverviewResult,
          lambda site, period, a: traffic.overview(site.id, period), _render_overview),
    _tool("get_top_pages", "Top pages",
          "The most viewed pages (URL path, without query string) with their page views and "
          "visitors." + PERIOD_NOTE, ListArgs, PagesResult,
          lambda site, period, a: traffic.top_pages(site.id, period, a["limit"]),
          _render_pages),
    _tool("get_top_sources", "Top traffic sources",
          "Where sessions come from, read from each session's first page view: the referrer "
          "host ('(direct)' for none or the site itself) and the UTM source (utm_source of the "
          "page properties or URL)." + PERIOD_NOTE, ListArgs, SourcesResult,
          lambda site, period, a: traffic.top_sources(site, period, a["limit"]),
          _render_sources),
    _tool("get_goal_conversions", "Goal conversions",
          "Conversions per goal, converting sessions and conversion rate (converting sessions "
          "/ sessions)." + PERIOD_NOTE, GoalArgs, GoalsResult,
          lambda site, period, a: traffic.goal_conversions(site.id, period, a["limit"],
                                                             a.get("goal")),
          _render_goals),
    _tool("get_revenue", "Revenue",
          "Revenue from trusted server events per currency, in integer minor units and exact "
          "major units: gross, refunds (negative amounts), net, orders. Also net revenue per "
          "traffic source: each payment is credited to the session named by its sessionId, "
          "else to the latest session of its identifiedUserId (the SDK's identify) that began "
          "before it, within 30 days; otherwise '(unattributed)'. Never sampled." + PERIOD_NOTE,
          ListArgs, RevenueResult,
          lambda site, period, a: revenue.revenue(site, period, a["limit"]), _render_revenue),
    _tool("get_web_vitals", "Web vitals",
          "p75 (percentile_cont: linear interpolation) of LCP, INP, FCP, TTFB (ms) and CLS, for "
          "the whole site with Google's rating, and for the pages with the most samples."
          + PERIOD_NOTE, ListArgs, VitalsResult,
          lambda site, period, a: performance.web_vitals(site.id, period, a["limit"]),
          _render_vitals),
    _tool("get_errors", "JavaScript errors",
          "The most frequent error messages with occurrences, affected sessions and when each "
          "was last seen." + PERIOD_NOTE, ListArgs, ErrorsResult,
          lambda site, period, a: performance.errors(site.id, period, a["limit"]), _render_errors),
    _tool("get_crawler_activity", "Crawler activity",
          "Bot fetches reported by the site's edge, by receive time: hits per category "
          "(ai_training, ai_search, ai_user, search_engine, seo, monitor, unknown), per crawler "
          "(with verified and spoofed hits), and the most fetched paths." + PERIOD_NOTE,
          CrawlerArgs, CrawlersResult,
          lambda site, period, a: crawlers.crawler_activity(site.id, period, a["limit"],
                                                             a.get("category")),
          _render_crawlers),
    _tool("get_ingest_health", "Ingest health",
          "Per UTC day of receipt: events, server events and crawl hits stored; events sampled "
          "away over quota; duplicate batches; bot requests filtered; requests rejected, by "
          "reason. The account of what was not counted." + PERIOD_NOTE, PeriodArgs,
          IngestResult,
          lambda site, period, a: ingest_health.ingest_health(site.id, period), _render_ingest),
]

INSTRUCTIONS = ("Read-only web analytics of one site (the site of the server key). Every tool "
                "takes `from`/`to` (UTC days, inclusive; default the last 30 days); list tools "
                "take `limit`. Start with get_overview.")

MCP = McpServer("egis", API_VERSION, "egis analytics", INSTRUCTIONS, TOOLS)


# --- The endpoint -------------------------------------------------------------------------

class JsonRpcRequestSchema(Schema):
    jsonrpc = fields.String(required=True, validate=validate.Equal("2.0"))
    id = fields.Raw(metadata={"description": "String or integer; absent for a notification."})
    method = fields.String(required=True, metadata={
        "description": "initialize, ping, tools/list, tools/call, server/discover, or a "
                       "notification."})
    params = fields.Dict()


def _accepts_json() -> bool:
    accept = request.headers.get("Accept")
    if not accept:
        return True
    types = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    return bool(types & {"application/json", "application/*", "*/*"})


@bp.post("/api/mcp")
@documented(
    "MCP endpoint for AI agents (Streamable HTTP, stateless, JSON responses)",
    body=JsonRpcRequestSchema,
    responses={200: (None, "A JSON-RPC response (or a batch of them)."),
               202: (None, "A notification or response was accepted; no body."),
               400: (None, "Not JSON-RPC, or a JSON-RPC error with an HTTP 400 status."),
               401: (None, "Missing or invalid key."),
               403: (None, "Not a server key."),
               404: (None, "JSON-RPC method not found (protocol 2026-07-28)."),
               405: (None, "Only POST."), 406: (None, "The client does not accept JSON."),
               413: (None, "Body too large."), 415: (None, "Not JSON."),
               429: (None, "Rate limited.")},
    tags=("agents",),
)
@require_key(SERVER)
@limited(MCP_LIMIT)
def mcp_endpoint() -> Response:
    if not _accepts_json():
        raise ApiError(406, "This endpoint answers application/json: accept it "
                            "(Accept: application/json, text/event-stream).")
    headers = {name.lower(): value for name, value in request.headers.items()}
    reply = MCP.handle(raw_body(), headers, g.site)
    if reply.body is None:
        return Response(status=reply.status)
    return Response(reply.content(), status=reply.status, mimetype="application/json")


# Rejections here are not ingest: answered as usual, but not tallied against the site's
# ingest health (app.errors tallies 400/413/429 for the ingest endpoints).
@bp.errorhandler(ApiError)
def _api_error(error: ApiError) -> Response:
    return render(error.status, error.message, error.headers, **error.extra)


@bp.errorhandler(RequestEntityTooLarge)
def _too_large(_error: RequestEntityTooLarge) -> Response:
    return render(413, MESSAGES[413])
