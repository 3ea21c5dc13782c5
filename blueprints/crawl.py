"""POST /api/crawl/report: a site's edge reports a bot-like document fetch."""
from typing import Any

from flask import Blueprint, Response, current_app, g
from flask.blueprints import BlueprintSetupState
from marshmallow import EXCLUDE, Schema, fields, post_load, validate

from app.access.auth import require_key
from app.crawlers import reports
from app.crawlers.user_agents import MAX_USER_AGENT_LENGTH
from app.ingest.idempotency import idempotent, once
from app.web.bodies import json_object, raw_body
from app.web.limits import PER_KEY, limited
from app.web.openapi import documented
from app.web.schema import Text
from models.api_key import SERVER

MAX_PATH_LENGTH = 2048
MAX_HOST_LENGTH = 253
MAX_FETCH_METADATA_LENGTH = 32

bp = Blueprint("crawl", __name__)


@bp.record_once
def _check_verifier_setting(state: BlueprintSetupState) -> None:
    # A bad EGIS_DNS_SERVER fails at startup, not on every report.
    reports.verifier_for(state.app)


def fetch_metadata_field(header: str) -> Text:
    return Text(allow_none=True, validate=validate.Length(max=MAX_FETCH_METADATA_LENGTH),
                metadata={"description": f"The request's {header} header; may be empty."})


class CrawlReportSchema(Schema):
    class Meta:
        unknown = EXCLUDE

    path = Text(required=True, validate=validate.Length(min=1, max=MAX_PATH_LENGTH), metadata={
        "description": "Requested path; the query string and fragment are cut before storing."})
    userAgent = Text(required=True, validate=validate.Length(max=MAX_USER_AGENT_LENGTH),
                     metadata={"description": "User-Agent header (may be empty); stored cut to "
                                              "512 characters."})
    host = Text(allow_none=True, validate=validate.Length(min=1, max=MAX_HOST_LENGTH))
    # fields.IP's error text never repeats the value: the address must not be echoed.
    ip = fields.IP(allow_none=True, metadata={
        "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}, {"type": "null"}],
        "description": "Client address: only names its network (/24, /48 or operator) and "
                       "verifies crawlers; never stored."})
    secFetchDest = fetch_metadata_field("Sec-Fetch-Dest")
    secFetchMode = fetch_metadata_field("Sec-Fetch-Mode")

    @post_load
    def to_report(self, data: dict[str, Any], **_kwargs: Any) -> reports.CrawlReport:
        ip = data.get("ip")
        return reports.CrawlReport(
            path=data["path"],
            user_agent=data["userAgent"],
            host=data.get("host"),
            ip=str(ip) if ip is not None else None,
            sec_fetch_dest=reports.fetch_metadata(data.get("secFetchDest")),
            sec_fetch_mode=reports.fetch_metadata(data.get("secFetchMode")),
        )


SCHEMA = CrawlReportSchema()


def no_content() -> Response:
    response = current_app.response_class(status=204)
    del response.headers["Content-Type"]
    return response


@bp.post("/api/crawl/report")
@documented(
    "Report a bot-like document fetch",
    body=CrawlReportSchema,
    responses={204: (None, "Recorded, or ignored as an ordinary browser navigation."),
               400: (None, "Invalid payload; nothing stored."),
               401: (None, "Missing or invalid key."),
               403: (None, "Not a server key."),
               413: (None, "Body too large."), 415: (None, "Not JSON."),
               429: (None, "Rate limited.")},
    tags=("server",),
)
@require_key(SERVER)
@limited(PER_KEY)
@idempotent
def post_crawl_report():
    report = SCHEMA.load(json_object(raw_body()))
    return once(lambda: store_report(report))


def store_report(report: reports.CrawlReport) -> Response:
    reports.record(g.site.id, report, reports.verifier_for(current_app))
    return no_content()
