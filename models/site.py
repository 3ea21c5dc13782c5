from datetime import UTC, datetime

from peewee import CharField, DateTimeField, IntegerField

from models.base import BaseModel

PLANS = ("free", "standard", "pro")
PLAN_QUOTAS = {"free": 100_000, "standard": 1_000_000, "pro": 10_000_000}
# Plans that may send performance/error events and trusted revenue.
PAID_PLANS = frozenset({"standard", "pro"})


def utcnow() -> datetime:
    """Naive UTC, the one convention for every timestamp column."""
    return datetime.now(UTC).replace(tzinfo=None)


class Site(BaseModel):
    domain = CharField(max_length=253, unique=True)
    plan = CharField(max_length=16, default="free")
    monthly_quota = IntegerField(null=True)  # None: the plan's default
    created_at = DateTimeField(default=utcnow)
    timezone = CharField(max_length=64, default="UTC")  # IANA: the agent tools' local days

    @property
    def quota(self) -> int:
        return self.monthly_quota if self.monthly_quota is not None else PLAN_QUOTAS[self.plan]

    @property
    def is_paid(self) -> bool:
        return self.plan in PAID_PLANS
