"""The tool catalogue: each analytics tool's name, description, argument and result schemas,
query and text rendering, and the MCP server that serves them (`MCP`).

The whole tools/list answer is read by an agent before every conversation, so it is kept small
(tests/agent/test_catalogue.py holds it under CATALOGUE_LIMIT characters): what every tool
shares (the period, sampling) is said once, in INSTRUCTIONS; the figures are defined once, in
app.analytics.vocabulary, which `describe_data` answers with; output schemas carry types only
(app.agent.catalogue.catalogue_schema). Every tool is made by app.agent.catalogue.tool: these
here read marshmallow arguments (app.agent.schemas) and name the zone only when it is not UTC,
so a UTC site's answers stay as they were for existing clients; the read surface's
(app.agent.read_tools) always name it."""
from app.agent.catalogue import result_schema, schema_arguments, tool
from app.agent.journey_tools import JOURNEY_TOOLS
from app.agent.protocol import McpServer
from app.agent.read_tools import READ_TOOLS
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
from app.analytics.period import PERIODS
from app.web.openapi import API_VERSION

CATALOGUE_LIMIT = 18_000  # characters of the tools/list answer (JSON), chart apps' _meta included


TOOLS = [
    *READ_TOOLS,
    *JOURNEY_TOOLS,
    tool("get_overview", "Traffic overview",
         f"`query`'s {', '.join(overview.METRICS)} over the period (their definitions: "
         "describe_data), and events by type.",
         schema_arguments(PeriodArgs), result_schema(OverviewResult),
         lambda site, period, a: overview.overview(site, period), render_overview,
         names_zone=False),
    tool("get_revenue", "Revenue",
         "Server events' revenue per currency (minor and exact major units: gross, refunds, "
         "net, orders), by visit:source and visit:channel of the visit credited: the "
         "sessionId's, else the identifiedUserId's latest in the 30 days before; else "
         "(unattributed). Never sampled. By any visit dimension: query's money metrics.",
         schema_arguments(ListArgs), result_schema(RevenueResult),
         lambda site, period, a: revenue.revenue(site, period, a["limit"]), render_revenue,
         names_zone=False),
    tool("get_web_vitals", "Web vitals",
         "p75 of the lcp, inp, fcp, ttfb (ms) and cls numbers of performance events, "
         "site-wide (rating: good, needs improvement, poor) and for the pages with the most "
         "samples.", schema_arguments(ListArgs), result_schema(VitalsResult),
         lambda site, period, a: performance.web_vitals(site.id, period, a["limit"]),
         render_vitals, names_zone=False),
    tool("get_errors", "JavaScript errors",
         "The most frequent error messages: occurrences, sessions, last seen.",
         schema_arguments(ListArgs), result_schema(ErrorsResult),
         lambda site, period, a: performance.errors(site.id, period, a["limit"]), render_errors,
         names_zone=False),
    tool("get_crawler_activity", "Crawler activity",
         "Bot fetches reported by the site's edge, by receive time: hits per category, per "
         "crawler (verified, spoofed) and per path.",
         schema_arguments(CrawlerArgs), result_schema(CrawlersResult),
         lambda site, period, a: crawlers.crawler_activity(site.id, period, a["limit"],
                                                           a.get("category")),
         render_crawlers, names_zone=False),
    tool("get_ingest_health", "Ingest health",
         "Per UTC day of receipt: events, server events and crawl hits stored; sampled "
         "away; duplicate batches, orders and Idempotency-Key repeats; bots filtered; "
         "rejected requests by reason.",
         schema_arguments(PeriodArgs), result_schema(IngestResult),
         lambda site, period, a: ingest_health.ingest_health(site.id, period), render_ingest,
         names_zone=False),
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
