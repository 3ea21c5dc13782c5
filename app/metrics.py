"""Prometheus metrics. Under gunicorn with several workers set PROMETHEUS_MULTIPROC_DIR
(deploy/gunicorn.conf.py does) so /metrics adds up every worker."""
import os
import time

from flask import Flask, Response, g, request
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)

REQUESTS = Counter("egis_http_requests_total", "HTTP requests answered.",
                   ["endpoint", "status"])
LATENCY = Histogram("egis_http_request_seconds", "Time to answer a request.", ["endpoint"],
                    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5))
EVENTS_STORED = Counter("egis_events_stored_total", "Events stored.", ["source"])


def render_metrics() -> Response:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return Response(generate_latest(registry), mimetype=CONTENT_TYPE_LATEST)
    return Response(generate_latest(), mimetype=CONTENT_TYPE_LATEST)


def _start_timer() -> None:
    g.started_at = time.perf_counter()


def _observe(response: Response) -> Response:
    endpoint = request.endpoint or "unmatched"
    REQUESTS.labels(endpoint, str(response.status_code)).inc()
    started = g.get("started_at")
    if started is not None:
        LATENCY.labels(endpoint).observe(time.perf_counter() - started)
    return response


def init_app(app: Flask) -> None:
    app.before_request(_start_timer)
    app.after_request(_observe)
