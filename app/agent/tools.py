"""The tool catalogue: each analytics tool's name, description, argument and result schemas,
query and text rendering, and the MCP server that serves them (`MCP`).

The whole tools/list answer is read by an agent before every conversation, so it is kept small
(tests/agent/test_catalogue.py holds it under CATALOGUE_LIMIT characters): what every tool
shares (the period, sampling) is said once, in INSTRUCTIONS; the figures are defined once, in
app.analytics.vocabulary, which `describe_data` answers with; output schemas carry types only
(`catalogue_schema`)."""
from collections.abc import Callable
from typing import Any

from marshmallow import Schema, ValidationError

from app.agent.protocol import McpServer, Tool, ToolError, ToolOutput
from app.agent.read_tools import (
    READ_TOOLS,
    answer_or_tool_error,
    catalogue_schema,
    tool_output,
)
from app.agent.retired import RETIRED_TOOLS
from app.agent.schemas import (
    CrawlerArgs,
    CrawlersResult,
    ErrorsResult,
    IngestResult,
    ListArgs,
    OverviewResult,
    PeriodArgs,
    RevenueResult,
    VitalsResult,
)
from app.agent.text import (
    render_crawlers,
    render_errors,
    render_ingest,
    render_overview,
    render_revenue,
    render_vitals,
)
from app.analytics import crawlers, ingest_health, overview, performance, revenue
from app.analytics.errors import ArgumentError
from app.analytics.period import PERIODS, Period, resolve_period
from app.web.errors import format_validation_messages
from app.web.openapi import API_VERSION
from app.web.schema import json_schema_of
from models import Site

Run = Callable[[Site, Period, dict[str, Any]], dict[str, Any]]
CATALOGUE_LIMIT = 16_000  # characters of the tools/list answer (JSON), chart apps' _meta included


def zone_of(period: Period) -> dict[str, str]:
    """These tools name the zone when it is not UTC, so a UTC site's answers stay as they
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
            period = resolve_period(site.timezone, loaded.pop("from_", None),
                                         loaded.pop("to", None), loaded.pop("period", None))
            found = answer_or_tool_error(lambda: run(site, period, loaded))
        except ArgumentError as error:
            raise ToolError(f"Invalid arguments for {name}: {error}") from None
        structured = {"site": site.domain, "from": period.first.isoformat(),
                      "to": period.last.isoformat(), **zone_of(period), **found}
        return tool_output(structured, render)

    return Tool(name, title, description, json_schema_of(args),
                catalogue_schema(json_schema_of(result)), handler)


TOOLS = [
    *READ_TOOLS,
    _tool("get_overview", "Traffic overview",
          f"`query`'s {', '.join(overview.METRICS)} over the period (their definitions: "
          "describe_data), and events by type.", PeriodArgs, OverviewResult,
          lambda site, period, a: overview.overview(site, period), render_overview),
    _tool("get_revenue", "Revenue",
          "Trusted server events' revenue per currency (minor units and exact major units: "
          "gross, refunds, net, orders), and by visit:source and visit:channel of the visit "
          "each payment is credited to: its sessionId's, else its identifiedUserId's latest "
          "visit before it (30 days at most); else (unattributed). Never sampled.",
          ListArgs, RevenueResult,
          lambda site, period, a: revenue.revenue(site, period, a["limit"]), render_revenue),
    _tool("get_web_vitals", "Web vitals",
          "p75 of the lcp, inp, fcp, ttfb (ms) and cls numbers of performance events, "
          "site-wide (rating: good, needs improvement, poor) and for the pages with the most "
          "samples.", ListArgs, VitalsResult,
          lambda site, period, a: performance.web_vitals(site.id, period, a["limit"]),
          render_vitals),
    _tool("get_errors", "JavaScript errors",
          "The most frequent error messages: occurrences, sessions, last seen.",
          ListArgs, ErrorsResult,
          lambda site, period, a: performance.errors(site.id, period, a["limit"]), render_errors),
    _tool("get_crawler_activity", "Crawler activity",
          "Bot fetches reported by the site's edge, by receive time: hits per category, per "
          "crawler (verified, spoofed) and per path.", CrawlerArgs, CrawlersResult,
          lambda site, period, a: crawlers.crawler_activity(site.id, period, a["limit"],
                                                             a.get("category")),
          render_crawlers),
    _tool("get_ingest_health", "Ingest health",
          "Per UTC day of receipt: events, server events and crawl hits stored; sampled "
          "away; duplicate batches, orders and Idempotency-Key repeats; bots filtered; "
          "rejected requests by reason.",
          PeriodArgs, IngestResult,
          lambda site, period, a: ingest_health.ingest_health(site.id, period), render_ingest),
]

INSTRUCTIONS = ("Read-only web analytics of one site (the site of the key). Every tool takes "
                "`from`/`to` (local days of the site's time zone, inclusive, YYYY-MM-DD) or "
                f"`period` ({', '.join(PERIODS)}: days ending today; default the last "
                "30 days). "
                "Figures are weighted by sampling weights and say `estimated` when a site "
                "over its quota was sampled; rates are percent with 1 decimal. Start with "
                "describe_data (the definitions, and what the site has) or get_overview, then "
                "ask `query`.")

MCP = McpServer("egis", API_VERSION, "egis analytics", INSTRUCTIONS,
                [*TOOLS, *RETIRED_TOOLS])
