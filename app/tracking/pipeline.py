"""The tracking endpoints' pipelines: each entry runs one endpoint's steps, in order, with one
receive time, so that the route only validates its body and answers.

POST /api/events (`ingest_events`): plan gate -> storage-free ids derived (app.tracking.anonymous;
the events marked storage-free when their visitor id is derived) -> the request's visit context
(app.context.request) -> sampling, stripping, skew correction and the store
(app.tracking.ingest). POST /api/goals (`ingest_posted_goal`): ids derived (and marked) -> visit
context -> the goal stored. The receive time is read once per request and shared by every step:
the derived visit and the stored events are measured from the same instant.
"""
from typing import Any

from flask import current_app

from app.context.request import request_context
from app.ingest import plans
from app.tracking import anonymous, ingest
from models import Site
from models.site import utcnow


def ingest_events(site: Site, batch: dict[str, Any]) -> ingest.IngestResult:
    """Store a validated batch of POST /api/events for `site`, within its request (whose
    headers and address the derived ids and the visit context read)."""
    plans.refuse_restricted_types(site, {event["type"] for event in batch["events"]})
    received_at = utcnow()
    storage_free = anonymous.derives_visitor(batch["anonymousId"])
    batch = anonymous.derive_batch_ids(site.id, batch, received_at)
    context = request_context(batch.get("fingerprint"))
    return ingest.ingest_batch(site, batch, received_at, current_app.extensions["egis_usage"],
                               current_app.config["SAMPLE_RATE"],
                               current_app.extensions.get("egis_writer"), context,
                               storage_free=storage_free)


def ingest_posted_goal(site: Site, goal: dict[str, Any]) -> ingest.IngestResult:
    """Store a validated goal of POST /api/goals for `site`, within its request."""
    received_at = utcnow()
    storage_free = anonymous.derives_visitor(goal.get("anonymous_id"))
    goal = anonymous.derive_goal_ids(site.id, goal, received_at)
    return ingest.ingest_goal(site, goal, received_at, current_app.extensions["egis_usage"],
                              current_app.config["SAMPLE_RATE"], request_context(),
                              storage_free=storage_free)
