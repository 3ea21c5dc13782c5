"""app.ingest.plans: what a site's plan lets it send."""
import pytest

from app.ingest import plans
from models import Site


@pytest.mark.parametrize(("plan", "types", "expected"), [
    ("free", {"pageview", "performance", "error"}, ["error", "performance"]),
    ("free", {"pageview", "custom", "goal"}, []),
    ("standard", {"performance", "error"}, []),
    ("pro", {"performance", "error"}, []),
])
def test_restricted_types(plan, types, expected):
    assert plans.restricted_types(Site(domain="x.example", plan=plan), types) == expected


def test_performance_and_errors_need_a_paid_plan_and_nothing_else_does():
    assert {"performance", "error"} == plans.PAID_TYPES
    assert not Site(domain="x.example", plan="free").is_paid
    assert Site(domain="x.example", plan="standard").is_paid
