"""The `flask db` commands (app.cli.db): an upgrade that finds nothing to do says so, and the
event table's partitions (PostgreSQL; SQLite keeps one table)."""
import re
from datetime import UTC, datetime
from itertools import pairwise

from tests.fixtures.cli import ok
from tests.fixtures.database import BACKEND


def test_an_upgrade_of_an_upgraded_schema_applies_nothing(cli):
    assert ok(cli("db", "upgrade")) == "Schema is up to date.\n"


def test_partitions_are_listed_from_this_month_with_the_default_last(cli):
    lines = ok(cli("db", "partitions")).splitlines()
    if BACKEND == "sqlite":
        assert lines == ["SQLite keeps one event table: nothing to partition."]
        return
    this_month = datetime.now(UTC).strftime("%Y-%m-01")
    months = [re.fullmatch(r"(\S+)\t(\d{4}-\d{2}-\d{2}) to (\d{4}-\d{2}-\d{2})(\tcreated now)?",
                           line) for line in lines[:-1]]
    assert all(months), lines
    starts = [month[2] for month in months]
    assert this_month in starts and starts == sorted(starts)
    assert all(earlier[3] == later[2] for earlier, later in pairwise(months))
    assert lines[-1].endswith("\tany other time")
    assert ok(cli("db", "partitions")).count("created now") == 0  # made once
