"""The ordered read of retention's default table (app.analytics.retention_firsts) gives the
rows retention's general statement gives, over tests/fixtures/journeys.py's nine weeks with a
sampled visitor and a storage-free one, by day, week and month, on both databases (the tool
chooses it where an index orders the visitors' visits, PostgreSQL; it is read here on SQLite
too); the tests of the tool's table by hand are tests/analytics/test_retention.py's."""
from typing import Any

import pytest

from app.analytics import reading, retention, retention_firsts
from app.analytics.period import shorthand_period, today_in
from models import Visit, database
from tests.fixtures.journeys import WEIGHTED, place


def by_key(rows: list[dict[str, Any]]) -> dict[tuple, tuple[float, bool]]:
    """{(kind, cohort, back): (weight, sampled)}: the free row's cohort is its own business."""
    found = {}
    for row in rows:
        key = ("free",) if row["kind"] == "free" else (row["kind"], str(row["cohort"]),
                                                        str(row["back"]))
        found[key] = (round(float(row["w"] or 0), 6),
                      bool(row.get("sampled")) if row["kind"] == "size" else False)
    return found


@pytest.mark.parametrize("interval", ["day", "week", "month"])
def test_the_ordered_read_gives_the_general_statements_rows(app, std_site, interval):
    site = std_site.site
    with app.app_context(), database.connection_context():
        place(site)
        place(site, WEIGHTED, weight=2.0)
        # B's visit came without storage
        Visit.update(storage_free=True).where(Visit.visitor == "B").execute()
        period = shorthand_period("30d", today_in(site.timezone), site.timezone)
        cohorts = retention.cohort_range(period, interval, explicit=False)
        with reading.reading():
            general = by_key(retention.general_sums(site, cohorts, cohorts, interval,
                                                    "first_visit", (), None))
            ordered = by_key(retention_firsts.sums(site, cohorts, interval))
    assert ordered == general
    sizes = [weight for key, (weight, _) in general.items() if key[0] == "size"]
    assert sum(sizes) >= (2 if interval == "day" else 6)  # F (weight 2) within 8 days
    if interval != "day":  # B (week -6) among the members of 8 weeks or months
        assert general[("free",)][0] == 1.0
    assert any(sampled for key, (_, sampled) in general.items() if key[0] == "size")  # F
