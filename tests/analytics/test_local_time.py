"""Site time zones: `flask sites --timezone`, periods as local days across DST, `period`."""
from datetime import date, datetime
from typing import Any

import pytest

from app.analytics.errors import ArgumentError
from app.analytics.period import Period, compare_period, resolve_period
from app.rollups import merging as rollups
from models import Event, Site, database
from tests.fixtures.analytics import _event
from tests.fixtures.cli import fails_with_one_line, ok, site_row


@pytest.fixture
def cli(app):
    runner = app.test_cli_runner()
    return lambda *args: runner.invoke(args=list(args))


def test_sites_create_and_update_take_an_iana_zone(app, cli):
    out = ok(cli("sites", "create", "tz.example", "--timezone", "Europe/Berlin"))
    assert out.strip() == "tz.example\tplan=free\tmonthly_quota=100000\ttimezone=Europe/Berlin"
    assert site_row(app, "tz.example").timezone == "Europe/Berlin"
    ok(cli("sites", "update", "tz.example", "--timezone", "America/New_York"))
    assert site_row(app, "tz.example").timezone == "America/New_York"
    ok(cli("sites", "create", "utc.example"))
    assert site_row(app, "utc.example").timezone == "UTC"


def test_an_unknown_zone_exits_with_one_line(app, cli):
    line = fails_with_one_line(cli("sites", "create", "tz.example", "--timezone",
                                   "Europe/Berln"), "unknown time zone")
    assert line == ("Error: unknown time zone 'Europe/Berln': give an IANA name such as "
                    "Europe/Berlin or UTC. Did you mean Europe/Berlin?")
    ok(cli("sites", "create", "tz.example"))
    fails_with_one_line(cli("sites", "update", "tz.example", "--timezone", "CEST"),
                        "unknown time zone 'CEST'")
    assert site_row(app, "tz.example").timezone == "UTC"


def test_local_days_across_dst_are_23_and_25_hours():
    spring = Period(date(2026, 3, 29), date(2026, 3, 29), "Europe/Berlin")
    # CET (+1) until 01:00 UTC on 29 March, CEST (+2) after: midnight is 23:00 / 22:00 UTC.
    assert spring.start == datetime(2026, 3, 28, 23) and spring.end == datetime(2026, 3, 29, 22)
    autumn = Period(date(2026, 10, 25), date(2026, 10, 25), "Europe/Berlin")
    # CEST until 01:00 UTC on 25 October, CET after: 22:00 UTC to 23:00 UTC the next day.
    assert autumn.start == datetime(2026, 10, 24, 22)
    assert autumn.end == datetime(2026, 10, 25, 23)
    assert Period(date(2026, 3, 1), date(2026, 3, 31)).start == datetime(2026, 3, 1)


@pytest.mark.parametrize(("name", "first", "last"), [
    ("today", "2026-03-15", "2026-03-15"), ("yesterday", "2026-03-14", "2026-03-14"),
    ("7d", "2026-03-09", "2026-03-15"), ("28d", "2026-02-16", "2026-03-15"),
    ("30d", "2026-02-14", "2026-03-15"), ("90d", "2025-12-16", "2026-03-15"),
    ("this_month", "2026-03-01", "2026-03-15"), ("last_month", "2026-02-01", "2026-02-28"),
    ("12mo", "2025-03-16", "2026-03-15"),
])
def test_period_shorthands_are_days_ending_today(name, first, last):
    period = resolve_period("Europe/Berlin", shorthand=name, today=date(2026, 3, 15))
    assert (period.first.isoformat(), period.last.isoformat()) == (first, last)
    assert period.timezone == "Europe/Berlin"


def test_bad_periods_and_comparisons_are_one_sentence():
    with pytest.raises(ArgumentError) as raised:
        resolve_period("UTC", shorthand="30days")
    assert str(raised.value) == ("Unknown period '30days'. Did you mean '30d'? Valid periods: "
                                 "today, yesterday, 7d, 28d, 30d, 90d, this_month, last_month, "
                                 "12mo.")
    with pytest.raises(ArgumentError, match="either `period` or `from`/`to`"):
        resolve_period("UTC", date(2026, 1, 1), shorthand="7d")
    march = Period(date(2026, 3, 1), date(2026, 3, 31), "Europe/Berlin")
    previous = compare_period(march, "previous_period")
    assert (previous.first, previous.last) == (date(2026, 1, 29), date(2026, 2, 28))
    year = compare_period(Period(date(2024, 2, 29), date(2024, 2, 29)), "year_over_year")
    assert (year.first, year.last) == (date(2023, 2, 28), date(2023, 2, 28))


def _call(app, keys: Any, name: str, **arguments: Any) -> dict[str, Any]:
    response = app.test_client().post("/api/mcp", headers=keys.server_headers(), json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}})
    result = response.get_json()["result"]
    assert result["isError"] is False, result
    return result


def test_the_tools_count_local_days(app, make_site):
    berlin = make_site("berlin.example", "standard")
    with app.app_context(), database.connection_context():
        Site.update(timezone="Europe/Berlin").where(Site.id == berlin.site.id).execute()
        Event.insert_many([_event(berlin.site.id, "s", "v", "pageview", at,
                                  domain="berlin.example") for at in (
            datetime(2026, 3, 28, 22, 59),  # 23:59 on the 28th in Berlin: outside
            datetime(2026, 3, 28, 23, 0),  # 00:00 on the 29th: inside
            datetime(2026, 3, 29, 21, 59),  # 23:59 CEST on the 29th: inside
            datetime(2026, 3, 29, 21, 59, 59, 999999),  # the 29th's last microsecond
            datetime(2026, 3, 29, 22, 0),  # 00:00 on the 30th: the next day
        )]).execute()
        rollups.rebuild()  # the rows ingest keeps: these events are inserted past ingest
    period = {"from": "2026-03-29", "to": "2026-03-30"}
    overview = _call(app, berlin, "get_overview", **period)
    structured = overview["structuredContent"]
    assert structured["timezone"] == "Europe/Berlin"
    assert structured["pageviews"] == 4
    assert "(Europe/Berlin)" in overview["content"][0]["text"]
    by_day = _call(app, berlin, "query", metrics=["pageviews"], dimensions=["time:day"],
                   **period)["structuredContent"]
    assert [(row["dimensions"], row["metrics"]) for row in by_day["results"]] == [
        (["2026-03-29"], [3]), (["2026-03-30"], [1])]
