"""GET /api/validate: the shape docs/API.md gives, and the quota it reports."""
import types
from datetime import UTC, datetime

import pytest

from app.tracking import quota
from models import Usage, database

FROZEN = datetime(2026, 3, 15, 12, 0, 0)


@pytest.fixture
def frozen_month(monkeypatch):
    monkeypatch.setattr(quota, "utcnow", lambda: FROZEN)
    return "2026-03"


def add_usage(app, site, period: str, *events: int) -> None:
    with app.app_context(), database.connection_context():
        for shard, count in enumerate(events):
            Usage.create(site_id=site.id, period=period, shard=shard, events=count)


def validate(client, headers):
    response = client.get("/api/validate", headers=headers)
    assert response.status_code == 200, response.get_data(True)
    assert response.mimetype == "application/json"
    return response.get_json()


def test_shape_exactly(client, std_site, frozen_month):
    body = validate(client, std_site.write_headers())
    assert body == {
        "valid": True,
        "canTrack": True,
        "plan": "standard",
        "quota": {"period": "2026-03", "limit": 1_000_000, "used": 0, "remaining": 1_000_000,
                  "sampling": False},
    }
    assert list(body) == ["valid", "canTrack", "plan", "quota"]
    assert list(body["quota"]) == ["period", "limit", "used", "remaining", "sampling"]


def test_period_is_the_current_utc_month(client, std_site):
    before = datetime.now(UTC).strftime("%Y-%m")
    period = validate(client, std_site.write_headers())["quota"]["period"]
    after = datetime.now(UTC).strftime("%Y-%m")
    assert period in {before, after}
    assert len(period) == 7 and period[4] == "-"


@pytest.mark.parametrize(("plan", "limit"), [
    ("free", 100_000), ("standard", 1_000_000), ("pro", 10_000_000)])
def test_plan_and_default_limit(client, make_site, plan, limit, frozen_month):
    site = make_site(f"{plan}.example", plan)
    body = validate(client, site.write_headers())
    assert (body["plan"], body["quota"]["limit"]) == (plan, limit)


def test_monthly_quota_override(client, make_site, frozen_month):
    site = make_site("q.example", "pro", monthly_quota=1234)
    assert validate(client, site.write_headers())["quota"]["limit"] == 1234


def test_used_sums_the_shards_of_this_site_and_month(app, client, make_site, frozen_month):
    site = make_site("u.example", "free")
    other = make_site("other.example", "free")
    add_usage(app, site.site, frozen_month, 10, 20, 30)
    add_usage(app, site.site, "2026-02", 5000)  # last month does not count
    add_usage(app, other.site, frozen_month, 7000)  # nor another site
    body = validate(client, site.write_headers())
    assert body["quota"] == {"period": "2026-03", "limit": 100_000, "used": 60,
                             "remaining": 99_940, "sampling": False}


@pytest.mark.parametrize(("used", "remaining", "sampling"), [
    (99, 1, False), (100, 0, True), (150, 0, True)])
def test_sampling_once_used_reaches_the_limit(app, client, make_site, frozen_month,
                                              used, remaining, sampling):
    site = make_site("s.example", "free", monthly_quota=100)
    add_usage(app, site.site, frozen_month, used - used // 2, used // 2)
    quota_body = validate(client, site.write_headers())["quota"]
    assert (quota_body["used"], quota_body["remaining"], quota_body["sampling"]) == (
        used, remaining, sampling)


def test_server_key_reports_the_same_quota_but_cannot_track(app, client, std_site,
                                                            frozen_month):
    add_usage(app, std_site.site, frozen_month, 3)
    write = validate(client, std_site.write_headers())
    server = validate(client, std_site.server_headers())
    assert server["canTrack"] is False
    assert server["quota"] == write["quota"]
    assert server["plan"] == write["plan"]


def test_usage_is_read_again_after_the_cache_ttl(make_app, std_site, frozen_month,
                                                  monkeypatch):
    clock = types.SimpleNamespace(now=500.0)
    monkeypatch.setattr(quota, "time", types.SimpleNamespace(monotonic=lambda: clock.now))
    app = make_app(USAGE_CACHE_SECONDS=5)
    client = app.test_client()
    assert validate(client, std_site.write_headers())["quota"]["used"] == 0
    add_usage(app, std_site.site, frozen_month, 42)
    assert validate(client, std_site.write_headers())["quota"]["used"] == 0  # cached
    clock.now += 6
    assert validate(client, std_site.write_headers())["quota"]["used"] == 42


@pytest.mark.parametrize("headers", [{}, {"X-API-Key": "egis_" + "B" * 43},
                                     {"Authorization": "Bearer nope"}])
def test_401_body(client, headers):
    response = client.get("/api/validate", headers=headers)
    assert response.status_code == 401
    body = response.get_json()
    assert set(body) == {"valid", "error"}
    assert body["valid"] is False
    assert isinstance(body["error"], str) and body["error"]


def test_takes_no_body_and_ignores_query(client, std_site):
    response = client.get("/api/validate?x=1", headers=std_site.write_headers(),
                          data=b"ignored", content_type="text/plain")
    assert response.status_code == 200
