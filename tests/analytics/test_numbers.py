"""app.analytics.numbers: how a figure is written in an answer."""
from datetime import datetime
from decimal import Decimal

from app.analytics.numbers import as_count, day_of, percent, timestamp


def test_a_weighted_count_is_the_integer_it_estimates():
    assert as_count(Decimal("2.5000")) == 2  # round half to even, as Python rounds
    assert as_count(3.6) == 4
    assert as_count(None) == 0


def test_a_rate_has_one_decimal_and_none_without_a_whole():
    assert percent(1, 3) == 33.3
    assert percent(2, 2) == 100.0
    assert percent(0, 5) == 0.0
    assert percent(1, 0) is None


def test_days_and_instants_read_the_same_on_both_databases():
    # PostgreSQL hands back datetimes, SQLite strings: one spelling in the answer.
    assert day_of(datetime(2026, 11, 30, 13, 5)) == "2026-11-30"
    assert day_of("2026-11-30 13:05:00") == "2026-11-30"
    assert timestamp(datetime(2026, 11, 30, 13, 5, 7, 123456)) == "2026-11-30T13:05:07Z"
    assert timestamp("2026-11-30 13:05:07.5") == "2026-11-30T13:05:07Z"
    assert timestamp(None) is None
