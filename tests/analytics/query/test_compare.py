"""`compare` (app.analytics.query.compare): the change between two periods, in % for counts and
in points for rates, and the other period's time buckets moved onto the queried one's."""
import pytest

from app.analytics.query.compare import COUNTS, change, shift


def test_a_count_changes_in_percent_with_one_decimal():
    assert change("visitors", 150, 100) == 50.0
    assert change("visitors", 1, 3) == -66.7
    assert change("visitors", 5, 0) is None  # no base
    assert change("visitors", None, 3) is None


def test_a_rate_changes_in_points():
    assert change("bounce_rate", 42.5, 40.0) == 2.5
    assert change("conversion_rate", 10.0, 0.0) == 10.0


def test_counts_are_the_metrics_a_missing_row_has_as_zero():
    assert "visitors" in COUNTS and "pageviews" in COUNTS
    assert "bounce_rate" not in COUNTS and "visit_duration" not in COUNTS


@pytest.mark.parametrize(("value", "name", "days", "months", "moved"), [
    ("2026-02-24", "time:day", 28, 1, "2026-03-24"),
    ("2026-02-24T13:00:00", "time:hour", 7, 0, "2026-03-03T13:00:00"),
    ("2026-02-23", "time:week", 30, 1, "2026-03-23"),  # a Monday stays a week's Monday
    ("2025-12", "time:month", 31, 1, "2026-01"),
    ("2025-11", "time:month", 0, 14, "2027-01"),
])
def test_a_time_bucket_moves_onto_the_queried_period(value, name, days, months, moved):
    assert shift(value, name, days, months) == moved


def test_other_dimensions_and_nulls_stay_as_they_are():
    assert shift("/pricing", "event:page", 28, 1) == "/pricing"
    assert shift(None, "time:day", 28, 1) is None
