"""What the rollups' tests share: posting a visit's page views, the merge's state, the MCP
`query` totals in process and over HTTP from a live server."""
import json
import urllib.request
from typing import Any

from peewee import fn

from app.rollups.mark import mark
from models import Event, Visit
from models.site import utcnow
from tests.helpers import call_tool, db, tool_result
from tests.tracking.helpers import batch, event, post_json

NEVER = 3600.0  # a merge interval no test waits for
TOTALS = ["visitors", "visits", "pageviews"]
PROTOCOL = "2025-11-25"


def visit_batch(session: str, visitor: str, views: int = 1) -> dict[str, Any]:
    return batch([event("pageview", pageUrl=f"https://std.example/p{n}") for n in range(views)],
                 sessionId=session, anonymousId=visitor)


def post(client, site, session: str, visitor: str, views: int = 1) -> None:
    body = visit_batch(session, visitor, views)
    assert post_json(client, "/api/events", body, site.write_headers()).status_code == 200


def insert_page_view(connection, site_id: int, session: str, path: str = "/") -> int:
    """A page view inserted by a psycopg2 connection of the test's own, in its open transaction
    (as an operator's psql or a stuck worker would); its id."""
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO event (site_id, session_id, anonymous_id, type, page_url, "
                       "path, hostname, occurred_at, received_at, weight) VALUES (%s, %s, %s, "
                       "'pageview', %s, %s, 'std.example', %s, %s, 1) RETURNING id",
                       (site_id, session, f"a-{session}", f"https://std.example{path}", path,
                        utcnow(), utcnow()))
        return cursor.fetchone()[0]


def merged_state(app) -> tuple[int, int, int]:
    """(visit rows, the mark, the largest event id)."""
    with db(app):
        return (Visit.select().count(), mark(),
                Event.select(fn.COALESCE(fn.MAX(Event.id), 0)).scalar())


def visitors_visits_pageviews(client, site) -> list[Any]:
    """The site's totals over the last 7 days, through the MCP `query` tool."""
    result = call_tool(client, site.server_key, "query", period="7d", metrics=TOTALS)
    return result["totals"]


def query_result(client, site, **arguments: Any) -> dict[str, Any]:
    """The MCP `query` tool's whole result (structured content and text) in process."""
    result = tool_result(client, {
        "Authorization": f"Bearer {site.server_key}", "MCP-Protocol-Version": PROTOCOL,
        "Accept": "application/json"}, "query", {"period": "7d", "metrics": TOTALS,
                                                 **arguments})
    assert not result.get("isError"), result
    return result


def live_tool(url: str, server_key: str, tool: str, timeout: float = 30,
              **arguments: Any) -> dict[str, Any]:
    """An MCP tools/call over HTTP to a live server; the tool's result."""
    request = urllib.request.Request(
        f"{url}/api/mcp", method="POST",
        data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": tool, "arguments": arguments}}).encode(),
        headers={"Authorization": f"Bearer {server_key}", "MCP-Protocol-Version": PROTOCOL,
                 "Accept": "application/json", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        result = json.loads(response.read())["result"]
    assert not result.get("isError"), result
    return result


def live_json(url: str, path: str, timeout: float = 30) -> tuple[int, Any]:
    """GET a live server's JSON (or text) answer: status and body."""
    try:
        with urllib.request.urlopen(f"{url}{path}", timeout=timeout) as response:
            body = response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        body, status = error.read(), error.code
    try:
        return status, json.loads(body)
    except ValueError:
        return status, body.decode()


def metric(text: str, name: str, **labels: str) -> float:
    """A series' value in a /metrics text (0 when absent)."""
    wanted = name + ("{" + ",".join(f'{key}="{value}"' for key, value in labels.items()) + "}"
                     if labels else "")
    for line in text.splitlines():
        if line.startswith(wanted + " "):
            return float(line.split()[-1])
    return 0.0
