"""What a site's plan lets it send: the plan gates of the ingest endpoints, in one place. Below
Standard, no performance or error events (POST /api/events) and no server events (POST
/api/server/events); a refusal is a 403 that stores nothing and is tallied."""
from flask import g

from app.web.errors import ApiError
from models import Site
from models.ingest_tally import REJECTED_403_PLAN

# Types that need the Standard plan or above.
PAID_TYPES = frozenset({"performance", "error"})


def restricted_types(site: Site, types: set[str]) -> list[str]:
    """Event types in `types` the site's plan does not include."""
    if site.is_paid:
        return []
    return sorted(types & PAID_TYPES)


def refuse_restricted_types(site: Site, types: set[str]) -> None:
    """403 (restrictedTypes: what to drop) when the batch has types the plan does not include."""
    restricted = restricted_types(site, types)
    if restricted:
        subject = (f"Event type {restricted[0]} needs" if len(restricted) == 1
                   else f"Event types {', '.join(restricted)} need")
        raise ApiError(403, f"{subject} the Standard plan or above; this site is on the "
                            f"{site.plan} plan. Nothing was stored.",
                       tally_reason=REJECTED_403_PLAN, restrictedTypes=restricted)


def require_paid_plan() -> None:
    """403 for server events below the Standard plan."""
    if not g.site.is_paid:
        raise ApiError(403, f"Server events need the Standard plan or above; this site is on "
                            f"the {g.site.plan} plan. Nothing was stored.",
                       tally_reason=REJECTED_403_PLAN)
