"""p75 as PostgreSQL's percentile_cont(0.75) computes it (app.analytics.percentile), in Python for
SQLite's aggregate, against the standard library's inclusive quantiles and, on PostgreSQL, the
database's own ordered-set aggregate."""
import random
import statistics

import pytest

from app.analytics.percentile import SqliteP75, p75
from models import database
from tests.fixtures.database import BACKEND


def test_p75_is_the_interpolation_at_three_quarters_of_the_ascending_values():
    assert p75([]) is None
    assert p75([7.0]) == 7.0
    assert p75([4.0, 1.0, 3.0, 2.0, 5.0]) == 4.0  # position 3 exactly
    assert p75([10.0, 20.0]) == 17.5  # 10 + (20 - 10) x 0.75


@pytest.mark.parametrize("seed", range(5))
def test_p75_agrees_with_the_inclusive_quartile(seed):
    rng = random.Random(seed)
    values = [rng.uniform(0, 5000) for _ in range(rng.randint(2, 300))]
    assert p75(values) == pytest.approx(statistics.quantiles(values, n=4, method="inclusive")[2],
                                        rel=1e-12)


def test_the_sqlite_aggregate_skips_nulls_and_answers_none_for_no_values():
    aggregate = SqliteP75()
    assert aggregate.finalize() is None
    for value in (None, 3.0, None, 1.0, 2.0):
        aggregate.step(value)
    assert aggregate.finalize() == p75([1.0, 2.0, 3.0]) == 2.5


def test_p75_is_what_the_database_computes(app):
    rng = random.Random(11)
    values = [round(rng.uniform(0, 4000), 3) for _ in range(41)]
    rows = ", ".join(f"({value})" for value in values)
    with app.app_context(), database.connection_context():
        if BACKEND == "postgres":
            (answer,), = database.execute_sql(
                "SELECT percentile_cont(0.75) WITHIN GROUP (ORDER BY v) FROM "
                f"(VALUES {rows}) AS t(v)").fetchall()
        else:
            database.connection().create_aggregate("test_p75", 1, SqliteP75)
            (answer,), = database.execute_sql(
                f"SELECT test_p75(column1) FROM (VALUES {rows})").fetchall()
    assert answer == pytest.approx(p75(values), rel=1e-12)
