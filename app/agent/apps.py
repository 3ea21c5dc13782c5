"""The chart apps: `query`, `funnel`, `retention` and `paths` results drawn in the
conversation (MCP Apps).

MCP Apps is the extension `io.modelcontextprotocol/ui` (final 2026-01-26). A client that declares
it (`capabilities.extensions["io.modelcontextprotocol/ui"].mimeTypes` holding
`text/html;profile=mcp-app`) is shown `_meta.ui.resourceUri` on the tools that have an app, and
may read the apps as resources; every other client sees none of this (app.agent.protocol decides
who declared what). The apps are the self-contained HTML documents built from charts/
(charts/dist/, committed, checked against a fresh build by .ci/run): every script and style
inline, no network, so their CSP declares no domain at all.
"""
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXTENSION = "io.modelcontextprotocol/ui"
MIME_TYPE = "text/html;profile=mcp-app"
DIST = Path(__file__).resolve().parents[2] / "charts" / "dist"
# No connect or resource domain: the app may reach nothing but its host (postMessage).
RESOURCE_META = {"ui": {"csp": {"connectDomains": [], "resourceDomains": []},
                        "prefersBorder": True}}


@dataclass(frozen=True)
class ChartApp:
    tool: str
    uri: str
    title: str
    description: str

    @property
    def name(self) -> str:
        return f"egis-{self.tool}-chart"

    def listing(self) -> dict[str, Any]:
        return {"uri": self.uri, "name": self.name, "title": self.title,
                "description": self.description, "mimeType": MIME_TYPE, "_meta": RESOURCE_META}

    def contents(self) -> dict[str, Any]:
        return {"uri": self.uri, "mimeType": MIME_TYPE, "text": _html(self.tool),
                "_meta": RESOURCE_META}


APPS = {app.uri: app for app in (
    ChartApp("query", "ui://egis/query", "egis query chart",
             "Draws a `query` result: a line over time for a time:* dimension (the comparison "
             "period dashed), bars for any other dimension, with a switch among the metrics."),
    ChartApp("funnel", "ui://egis/funnel", "egis funnel chart",
             "Draws a `funnel` result: each step's count with its conversion and drop-off."),
    ChartApp("retention", "ui://egis/retention", "egis retention chart",
             "Draws a `retention` result: the cohort table, each cell shaded by its rate."),
    ChartApp("paths", "ui://egis/paths", "egis paths chart",
             "Draws a `paths` result: the steps as columns of bars, the links between them."),
)}
TOOL_APPS = {app.tool: app for app in APPS.values()}


def declares_apps(capabilities: Any) -> bool:
    """Whether client capabilities (an initialize's, or a 2026-07-28 request's `_meta` ones)
    declare the extension with the HTML profile. Any other shape declares nothing."""
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    settings = extensions.get(EXTENSION) if isinstance(extensions, dict) else None
    mime_types = settings.get("mimeTypes") if isinstance(settings, dict) else None
    return isinstance(mime_types, list) and MIME_TYPE in mime_types


def tool_meta(tool: str) -> dict[str, Any] | None:
    """The `_meta` a declaring client sees on `tool`: the app's URI in the nested key and in the
    flat key the 2026-01-26 spec still names (deprecated, read by hosts built before it)."""
    app = TOOL_APPS.get(tool)
    if app is None:
        return None
    return {"ui": {"resourceUri": app.uri}, "ui/resourceUri": app.uri}


@functools.cache
def _html(tool: str) -> str:
    """The built app, read once per process."""
    return (DIST / f"{tool}.html").read_text(encoding="utf-8")
