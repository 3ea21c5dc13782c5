"""The tracking ingest domain: from a validated batch or goal to stored events.

Rules (docs/ARCHITECTURE.md, "The ingest contract"): plan gates, money stripped from properties,
personal data filtered from form submissions, event time corrected for client clock skew, whole
sessions sampled once a site is over its monthly quota, and a batch id stored at most once per site.
Each event also gets its visit context (app.context): the request's, derived by the caller, and its
own page's path and host and, for a page view, its acquisition values.
"""
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from app.context.acquisition import NOT_A_PAGE_VIEW, acquisition, page_location
from app.context.request import NO_CONTEXT, RequestContext
from app.ingest.privacy import sanitize_form_submit, strip_money
from app.rollups import timer as rollups
from app.runtime import metrics, tally
from app.storage import durable
from app.tracking import quota, store
from app.tracking.writer import MAX_GROUPED_EVENTS, GroupWriter
from app.web.schema import MAX_EPOCH_MS, MAX_EVENT_AGE_MS
from models import Site
from models.ingest_tally import DUPLICATE, SAMPLED


@dataclass(frozen=True)
class IngestResult:
    count: int
    duplicate: bool = False
    sampled: bool = False

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"success": True, "count": self.count}
        if self.sampled:
            body["sampled"] = True
        if self.duplicate:
            body["duplicate"] = True
        return body


@dataclass(frozen=True)
class SamplingDecision:
    keep: bool
    weight: float
    sampling: bool = field(default=False)


def occurred_at(received_at: datetime, sent_ms: float, event_ms: float) -> datetime:
    """Skew-corrected event time: receive time minus how long before sending it happened.

    Clamped to the receive time: an event cannot happen after it arrived (one stamped after its
    batch was sent is stored at the receive time, never in the future).
    """
    delay_ms = max(float(sent_ms) - float(event_ms), 0.0)
    return received_at - timedelta(milliseconds=delay_ms)


def arrives_too_late(sent_ms: float, event_ms: float) -> bool:
    """Whether the event's corrected time (occurred_at) lies more than MAX_EVENT_AGE_DAYS
    before its receipt: that is how long before its batch was sent it happened, whenever the
    batch arrives. Such an event is refused with its batch."""
    return float(sent_ms) - float(event_ms) > MAX_EVENT_AGE_MS


def clean_properties(event_type: str, properties: dict[str, Any] | None) -> dict[str, Any] | None:
    if not properties:
        return properties
    properties = strip_money(properties)
    if event_type == "form_submit":
        properties = sanitize_form_submit(properties)
    return properties


def decide_sampling(site: Site, session_key: str | None, usage: quota.UsageCache,
                    sample_rate: float, period: str) -> SamplingDecision:
    state = quota.QuotaStatus(period=period, limit=site.quota, used=usage.used(site.id, period))
    if not state.sampling:
        return SamplingDecision(keep=True, weight=1.0)
    keep = session_key is not None and sample_rate > 0 and quota.keeps_session(session_key,
                                                                              sample_rate)
    return SamplingDecision(keep=keep, weight=1.0 / sample_rate if keep else 0.0, sampling=True)


def page_columns(event_type: str, page_url: str | None, referrer: str | None,
                 site_domain: str) -> dict[str, Any]:
    """An event's own visit columns: its page's path and host, and a page view's acquisition
    values (app.context.acquisition)."""
    path, hostname = page_location(page_url)
    if event_type != "pageview":
        return {"path": path, "hostname": hostname, **NOT_A_PAGE_VIEW}
    return {"path": path, "hostname": hostname,
            **acquisition(page_url, referrer, site_domain).columns()}


def event_row(event: dict[str, Any], received_at: datetime, sent_ms: float,
              site_domain: str) -> dict[str, Any]:
    page_url, referrer = event.get("pageUrl"), event.get("referrer")
    return {
        "type": event["type"],
        "name": event.get("name"),
        "page_url": page_url,
        "page_title": event.get("pageTitle"),
        "referrer": referrer,
        "properties": clean_properties(event["type"], event.get("properties")),
        "client_ts": int(event["timestamp"]),
        "occurred_at": occurred_at(received_at, sent_ms, event["timestamp"]),
        **page_columns(event["type"], page_url, referrer, site_domain),
    }


def ingest_batch(site: Site, batch: dict[str, Any], received_at: datetime,
                 usage: quota.UsageCache, sample_rate: float, writer: GroupWriter | None = None,
                 context: RequestContext = NO_CONTEXT, storage_free: bool = False
                 ) -> IngestResult:
    """Store a validated, plan-checked batch received at `received_at`; idempotent on the batch
    id (app.tracking.pipeline runs it).

    With a writer (group commit, PostgreSQL), a small batch shares a commit with concurrent
    ones; a larger one (over MAX_GROUPED_EVENTS) is stored alone. `context` is the request's
    visit context (app.context.request), stored with every event; `storage_free`: its visitor
    id was derived (app.tracking.anonymous.derives_visitor), said on every event.
    """
    period = quota.period_of(received_at)
    decision = decide_sampling(site, batch["sessionId"], usage, sample_rate, period)
    events = batch["events"]
    rows = ([event_row(e, received_at, batch["timestamp"], site.domain) for e in events]
            if decision.keep else [])
    batch_rows = store.BatchRows(
        site_id=site.id, batch_key=batch["id"], session_id=batch["sessionId"],
        anonymous_id=batch["anonymousId"], user_id=batch.get("userId"),
        sent_ts=int(batch["timestamp"]), received_at=received_at, weight=decision.weight,
        events=rows, period=period, shard=quota.shard(), context=context,
        storage_free=storage_free)
    if writer is not None and len(rows) <= MAX_GROUPED_EVENTS:
        outcome = writer.store(batch_rows)
    else:
        outcome = store.store(batch_rows)
    if not outcome.stored:
        durable.confirm()  # a 200 only once the first copy is on the standby too
        tally.add(site.id, DUPLICATE)
        return IngestResult(count=outcome.count, duplicate=True, sampled=decision.sampling)
    usage.add(site.id, period, len(rows))
    metrics.count_stored_events(row["type"] for row in rows)
    if rows:
        rollups.stored()
    if decision.sampling:
        tally.add(site.id, SAMPLED, len(events) - len(rows))
    return IngestResult(count=len(rows), sampled=decision.sampling)


def parse_client_timestamp(raw: str | None) -> int | None:
    """Epoch milliseconds from an ISO 8601 string or a string of epoch ms; None otherwise."""
    if not raw:
        return None
    text = raw.strip()
    if text.isascii() and text.isdigit():  # not "²" or other Unicode digits int() refuses
        millis = int(text)
    else:
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)  # no zone given: UTC, like every time we store
        millis = int(moment.timestamp() * 1000)
    # The range event timestamps are held to; beyond it (or a bigint) is no believable time.
    return millis if 0 <= millis <= MAX_EPOCH_MS else None


def goal_time(client_ms: int | None, received_at: datetime) -> datetime:
    """When a goal happened: its own timestamp when it has one, never after it arrived."""
    if client_ms is None:
        return received_at
    try:
        moment = datetime.fromtimestamp(client_ms / 1000, UTC).replace(tzinfo=None)
    except (OverflowError, OSError, ValueError):
        return received_at
    return min(moment, received_at)


def ingest_goal(site: Site, goal: dict[str, Any], received_at: datetime,
                usage: quota.UsageCache, sample_rate: float,
                context: RequestContext = NO_CONTEXT, storage_free: bool = False
                ) -> IngestResult:
    """Store a goal posted to /api/goals, received at `received_at`, as an event of type
    `goal`, with the request's visit context and whether its visitor id was derived
    (`storage_free`; app.tracking.pipeline runs it)."""
    period = quota.period_of(received_at)
    session_key = goal.get("session_id") or goal.get("anonymous_id")
    decision = decide_sampling(site, session_key, usage, sample_rate, period)
    if not decision.keep:
        tally.add(site.id, SAMPLED)
        return IngestResult(count=0, sampled=True)
    raw_time = goal.get("client_timestamp")
    client_ms = parse_client_timestamp(raw_time)
    properties = strip_money(goal.get("metadata") or {}) or None
    page_url, referrer = goal.get("page_url"), goal.get("referrer")
    store.store(store.BatchRows(
        site_id=site.id, batch_key=None, session_id=goal.get("session_id"),
        anonymous_id=goal.get("anonymous_id"), user_id=None, sent_ts=None,
        received_at=received_at, weight=decision.weight, period=period, shard=quota.shard(),
        context=context, storage_free=storage_free,
        events=[{"type": "goal", "name": goal["goal_name"], "page_url": page_url,
                 "page_title": goal.get("page_title"), "referrer": referrer,
                 "properties": properties, "client_ts": client_ms,
                 "client_time_raw": raw_time, "occurred_at": goal_time(client_ms, received_at),
                 **page_columns("goal", page_url, referrer, site.domain)}]))
    usage.add(site.id, period, 1)
    metrics.count_stored_events(["goal"])
    rollups.stored()
    return IngestResult(count=1, sampled=decision.sampling)
