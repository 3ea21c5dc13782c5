"""GET /tracker.js: the built JavaScript tracker (sdk/dist/tracker.js), cacheable.

The file is read once per process and served with a strong ETag (a hash of its bytes), so a
browser or nginx revalidates with If-None-Match and gets a 304 without the body. It is cached an
hour: a new tracker reaches visitors within that time of a deploy.
"""
import hashlib
from dataclasses import dataclass

from flask import Blueprint, Response, current_app, request

from app.storage.db import without_database
from app.web.errors import ApiError

bp = Blueprint("tracker", __name__)

CONTENT_TYPE = "text/javascript"
CACHE_CONTROL = "public, max-age=3600"


@dataclass(frozen=True)
class BuiltTracker:
    body: bytes
    etag: str


def _built_tracker() -> BuiltTracker:
    tracker = current_app.extensions.get("egis_tracker")
    if tracker is None:
        try:
            with open(current_app.config["TRACKER_PATH"], "rb") as built:
                body = built.read()
        except OSError:
            raise ApiError(404, "The tracker is not built: run `npm ci && npm run build` in "
                                "sdk/.") from None
        tracker = BuiltTracker(body, hashlib.sha256(body).hexdigest()[:32])
        current_app.extensions["egis_tracker"] = tracker
    return tracker


@bp.get("/tracker.js")
@without_database
def tracker_js() -> Response:
    tracker = _built_tracker()
    response = Response(tracker.body, content_type=CONTENT_TYPE)
    response.set_etag(tracker.etag)
    response.headers["Cache-Control"] = CACHE_CONTROL
    # A site that isolates itself (COEP require-corp) may still load the script from us.
    response.headers["Cross-Origin-Resource-Policy"] = "cross-origin"
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response.make_conditional(request)
