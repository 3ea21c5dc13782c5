"""Prometheus metrics: the series, and /metrics.

Under gunicorn every worker is its own process: deploy/gunicorn.conf.py sets
PROMETHEUS_MULTIPROC_DIR before the app is imported, each worker then writes its values to files
there, and /metrics adds up every worker's (prometheus_client's multiprocess mode). Without it
(one process: tests, `flask run`) the process's own registry is served.
"""
import os
from collections import Counter as Tally
from collections.abc import Iterable

from flask import Response
from prometheus_client import (
    CONTENT_TYPE_PLAIN_0_0_4,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)

from models.ingest_tally import BOT, DUPLICATE, DUPLICATE_IDEMPOTENCY_KEY, DUPLICATE_ORDER, SAMPLED

REQUESTS = Counter("egis_http_requests_total", "HTTP requests answered, by endpoint and status.",
                   ["endpoint", "status"])
LATENCY = Histogram("egis_http_request_seconds", "Time to answer a request, by endpoint.",
                    ["endpoint"],
                    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5))
EVENTS_STORED = Counter("egis_events_stored_total",
                        "Tracking events stored (goals included), by event type.", ["type"])
SERVER_EVENTS_STORED = Counter("egis_server_events_stored_total", "Server events stored.")
EVENTS_SAMPLED = Counter("egis_events_sampled_total",
                         "Events not stored because their site is over quota and their session "
                         "fell outside the sample.")
DUPLICATES = Counter("egis_duplicates_total",
                     "Resends stored once: batches with a known id (batch), server events with "
                     "a known orderId (order), requests repeating an Idempotency-Key "
                     "(idempotency_key).", ["kind"])
# The ingest-health tally's duplicate reasons, by their label here.
DUPLICATE_KINDS = {DUPLICATE: "batch", DUPLICATE_ORDER: "order",
                   DUPLICATE_IDEMPOTENCY_KEY: "idempotency_key"}
BOT_REQUESTS = Counter("egis_bot_requests_total",
                       "Browser requests from known bots: answered 200, nothing stored.")
REJECTIONS = Counter("egis_rejected_requests_total",
                     "Authenticated ingest requests refused, by reason (as in the ingest-health "
                     "tally: rejected_400, rejected_403_plan, rejected_403_origin, rejected_413, "
                     "rejected_429).", ["reason"])
READ_REPLICA_READS = Counter("egis_read_replica_reads_total",
                             "Agent tool calls answered from the read replica.")
READ_REPLICA_FALLBACKS = Counter(
    "egis_read_replica_fallbacks_total",
    "Agent tool calls answered from the primary although a read replica is configured, by "
    "reason: lagging (not caught up within EGIS_READ_REPLICA_WAIT_SECONDS), down, conflict "
    "(the replica cancelled the read for a recovery conflict).", ["reason"])
ROLLUP_WAIT_TIMEOUTS = Counter(
    "egis_rollup_wait_timeouts_total",
    "Agent tool calls answered from the rollups as merged, with a warning: inserts in flight "
    "(or another merge) held the call's merge up past EGIS_ROLLUP_WAIT_SECONDS.")

# Exactly this, once: Werkzeug would append a second charset to a text/* mimetype.
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4


def observe_request(endpoint: str, status: int, seconds: float) -> None:
    REQUESTS.labels(endpoint, str(status)).inc()
    LATENCY.labels(endpoint).observe(seconds)


def count_stored_events(types: Iterable[str]) -> None:
    for event_type, count in Tally(types).items():
        EVENTS_STORED.labels(event_type).inc(count)


def count_server_event_stored() -> None:
    SERVER_EVENTS_STORED.inc()


def count_not_stored(reason: str, count: int) -> None:
    """What the ingest-health tally counts (models.ingest_tally reasons), as series."""
    if reason == SAMPLED:
        EVENTS_SAMPLED.inc(count)
    elif reason in DUPLICATE_KINDS:
        DUPLICATES.labels(DUPLICATE_KINDS[reason]).inc(count)
    elif reason == BOT:
        BOT_REQUESTS.inc(count)
    else:
        REJECTIONS.labels(reason).inc(count)


def render_metrics() -> Response:
    registry = REGISTRY
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    return Response(generate_latest(registry), content_type=CONTENT_TYPE)
