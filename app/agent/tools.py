"""The tool catalogue: each analytics tool's name, description, argument and result schemas,
query and text rendering, and the MCP server that serves them (`MCP`)."""
from collections.abc import Callable
from typing import Any

from marshmallow import Schema, ValidationError

from app.agent.protocol import McpServer, Tool, ToolError, ToolOutput
from app.agent.read_tools import READ_TOOLS, answer_or_tool_error, tool_output
from app.agent.schemas import (
    CountArgs,
    CountResult,
    CrawlerArgs,
    CrawlersResult,
    ErrorsResult,
    GoalArgs,
    GoalsResult,
    IngestResult,
    ListArgs,
    OverviewResult,
    PagesResult,
    PeriodArgs,
    RevenueResult,
    SourcesResult,
    VitalsResult,
)
from app.agent.text import (
    render_count,
    render_crawlers,
    render_errors,
    render_goals,
    render_ingest,
    render_overview,
    render_pages,
    render_revenue,
    render_sources,
    render_vitals,
)
from app.analytics import base, crawlers, ingest_health, performance, revenue, traffic
from app.errors import format_validation_messages
from app.openapi import API_VERSION
from app.validation import json_schema_of
from models import Site

Run = Callable[[Site, base.Period, dict[str, Any]], dict[str, Any]]


def zone_of(period: base.Period) -> dict[str, str]:
    """The kept tools name the zone when it is not UTC, so a UTC site's answers stay as they
    were for existing clients; query, funnel and describe_data always name it."""
    return {} if period.timezone == "UTC" else {"timezone": period.timezone}


def _tool(name: str, title: str, description: str, args: type[Schema], result: type[Schema],
          run: Run, render: Callable[[dict[str, Any]], str]) -> Tool:
    loader = args()

    def handler(site: Site, arguments: dict[str, Any]) -> ToolOutput:
        try:
            loaded = loader.load(arguments)
        except ValidationError as error:
            raise ToolError(f"Invalid arguments for {name}: "
                            f"{format_validation_messages(error.messages)}") from None
        try:
            period = base.resolve_period(site.timezone, loaded.pop("from_", None),
                                         loaded.pop("to", None), loaded.pop("period", None))
            found = answer_or_tool_error(lambda: run(site, period, loaded))
        except base.ArgumentError as error:
            raise ToolError(f"Invalid arguments for {name}: {error}") from None
        structured = {"site": site.domain, "from": period.first.isoformat(),
                      "to": period.last.isoformat(), **zone_of(period), **found}
        return tool_output(structured, render)

    return Tool(name, title, description, json_schema_of(args), json_schema_of(result), handler)


PERIOD_NOTE = (" Days are local to the site's time zone: `from`/`to` inclusive or `period`, "
               "the last 30 days by default. "
               "Figures from sampled data (a site over its quota) are scaled by the sampling "
               "weights and flagged `estimated`.")

SUBSUMED = " `query` answers this and more (filters, breakdowns, comparison)."

TOOLS = [
    *READ_TOOLS,
    _tool("count_events", "Count events",
          "Count events, optionally of one type (pageview, click, form_submit, scroll, "
          "performance, custom, goal, error, heartbeat) and/or one name, per day and per name."
          + SUBSUMED + PERIOD_NOTE, CountArgs, CountResult,
          lambda site, period, a: traffic.count_events(site, period, a["limit"],
                                                         a.get("type"), a.get("name")),
          render_count),
    _tool("get_overview", "Traffic overview",
          "Visitors (distinct anonymous ids), sessions (with at least one page view), page "
          "views, bounce rate (sessions with one page view and no click, form submit, custom "
          "event, goal or heartbeat), average engaged time (15 s per heartbeat, per session) "
          "and events by type." + PERIOD_NOTE, PeriodArgs, OverviewResult,
          lambda site, period, a: traffic.overview(site, period), render_overview),
    _tool("get_top_pages", "Top pages",
          "The most viewed pages (URL path, without query string) with their page views and "
          "visitors." + SUBSUMED + PERIOD_NOTE, ListArgs, PagesResult,
          lambda site, period, a: traffic.top_pages(site, period, a["limit"]),
          render_pages),
    _tool("get_top_sources", "Top traffic sources",
          "Where sessions come from, read from each session's first page view: the referrer "
          "host ('(direct)' for none or the site itself) and the UTM source (utm_source of the "
          "page properties or URL)." + SUBSUMED + PERIOD_NOTE, ListArgs, SourcesResult,
          lambda site, period, a: traffic.top_sources(site, period, a["limit"]),
          render_sources),
    _tool("get_goal_conversions", "Goal conversions",
          "Conversions per goal, converting sessions and conversion rate (converting sessions "
          "/ sessions)." + SUBSUMED + PERIOD_NOTE, GoalArgs, GoalsResult,
          lambda site, period, a: traffic.goal_conversions(site, period, a["limit"],
                                                             a.get("goal")),
          render_goals),
    _tool("get_revenue", "Revenue",
          "Revenue from trusted server events per currency, in integer minor units and exact "
          "major units: gross, refunds (negative amounts), net, orders. Also net revenue per "
          "traffic source: each payment is credited to the session named by its sessionId, "
          "else to the latest session of its identifiedUserId (the SDK's identify) that began "
          "before it, within 30 days; otherwise '(unattributed)'. Never sampled." + PERIOD_NOTE,
          ListArgs, RevenueResult,
          lambda site, period, a: revenue.revenue(site, period, a["limit"]), render_revenue),
    _tool("get_web_vitals", "Web vitals",
          "p75 (percentile_cont: linear interpolation) of LCP, INP, FCP, TTFB (ms) and CLS, for "
          "the whole site with Google's rating, and for the pages with the most samples. "
          "Samples are the `lcp`, `inp`, `cls`, `fcp` and `ttfb` numbers in the properties of "
          "performance events (one or several per event)."
          + PERIOD_NOTE, ListArgs, VitalsResult,
          lambda site, period, a: performance.web_vitals(site.id, period, a["limit"]),
          render_vitals),
    _tool("get_errors", "JavaScript errors",
          "The most frequent error messages with occurrences, affected sessions and when each "
          "was last seen." + PERIOD_NOTE, ListArgs, ErrorsResult,
          lambda site, period, a: performance.errors(site.id, period, a["limit"]), render_errors),
    _tool("get_crawler_activity", "Crawler activity",
          "Bot fetches reported by the site's edge, by receive time: hits per category "
          "(ai_training, ai_search, ai_user, search_engine, seo, monitor, unknown), per crawler "
          "(with verified and spoofed hits), and the most fetched paths." + PERIOD_NOTE,
          CrawlerArgs, CrawlersResult,
          lambda site, period, a: crawlers.crawler_activity(site.id, period, a["limit"],
                                                             a.get("category")),
          render_crawlers),
    _tool("get_ingest_health", "Ingest health",
          "Per UTC day of receipt: events, server events and crawl hits stored; events sampled "
          "away over quota; duplicate batches; bot requests filtered; requests rejected, by "
          "reason. The account of what was not counted (the latest may still be on its way: "
          "each worker writes these counts once a second by default)." + PERIOD_NOTE,
          PeriodArgs,
          IngestResult,
          lambda site, period, a: ingest_health.ingest_health(site.id, period), render_ingest),
]

INSTRUCTIONS = ("Read-only web analytics of one site (the site of the server key). Every tool "
                "takes `from`/`to` (local days of the site's time zone, inclusive) or `period` "
                "(today, 7d, 30d, this_month, ...; default the last 30 days). Start with "
                "describe_data or get_overview, then ask `query`.")

MCP = McpServer("egis", API_VERSION, "egis analytics", INSTRUCTIONS, TOOLS)
