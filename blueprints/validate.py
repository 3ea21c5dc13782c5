"""GET /api/validate: is this tracking key good, and how is the site's quota?"""
from flask import Blueprint, current_app, g
from marshmallow import Schema, fields

from app.access.auth import require_key
from app.tracking import quota
from app.web import cors
from app.web.cors import check_origin
from app.web.errors import ApiError, render
from app.web.limits import VALIDATE, limited
from app.web.openapi import documented
from models.api_key import READ, SERVER, WRITE

bp = Blueprint("validate", __name__)
cors.enable(bp)


class QuotaSchema(Schema):
    period = fields.String(required=True, metadata={"example": "2026-11"})
    limit = fields.Integer(required=True)
    used = fields.Integer(required=True)
    remaining = fields.Integer(required=True)
    sampling = fields.Boolean(required=True, metadata={
        "description": "True once the quota is reached: events are sampled, not refused."})


class ValidateSchema(Schema):
    valid = fields.Boolean(required=True)
    canTrack = fields.Boolean(metadata={"description": "False for a server or read key."})
    plan = fields.String()
    quota = fields.Nested(QuotaSchema)


class InvalidKeySchema(Schema):
    valid = fields.Boolean(required=True)
    error = fields.String()


@bp.get("/api/validate")
@documented(
    "Validate a key and report the site's quota",
    responses={200: (ValidateSchema, "The key is valid."),
               401: (InvalidKeySchema, "Missing, unknown or revoked key."),
               403: (InvalidKeySchema, "A browser request from another site's Origin."),
               429: (InvalidKeySchema, "Rate limited (per client IP).")},
    tags=("keys",),
)
@limited(VALIDATE)  # counted before the key is checked: a flood of bad keys is limited too
@require_key(WRITE, SERVER, READ)
def validate_key():
    site = g.site
    check_origin(site.domain)
    state = quota.status(site, current_app.extensions["egis_usage"])
    return {
        "valid": True,
        "canTrack": g.key.kind == WRITE,
        "plan": site.plan,
        "quota": {"period": state.period, "limit": state.limit, "used": state.used,
                  "remaining": state.remaining, "sampling": state.sampling},
    }


@bp.errorhandler(ApiError)
def _key_error(error: ApiError):
    # The spec's 401 body for this endpoint also says `valid: false`.
    return render(error.status, error.message, error.headers, valid=False, **error.extra)
