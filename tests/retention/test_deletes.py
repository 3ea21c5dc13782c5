"""Deleting in batches by walking the primary key (app.retention.deletes): every matching row
goes, however many batches it takes, and nothing else."""
from datetime import date

from app.retention.deletes import delete_where
from models import IngestTally, database


def _tallies(app, site_id: int, counts: list[int]) -> None:
    with app.app_context(), database.connection_context():
        IngestTally.insert_many([{"site_id": site_id, "day": date(2026, 1, day + 1),
                                  "reason": "bot", "count": count}
                                 for day, count in enumerate(counts)]).execute()


def _left(app) -> list[tuple[int, int]]:
    with app.app_context(), database.connection_context():
        return list(IngestTally.select(IngestTally.site_id, IngestTally.count)
                    .order_by(IngestTally.id).tuples())


def test_every_matching_row_goes_in_batches_smaller_than_the_matches(app):
    _tallies(app, 1, [5, 1, 7, 2, 9, 3, 8])
    _tallies(app, 2, [9, 9])
    with app.app_context(), database.connection_context():
        deleted = delete_where(IngestTally, (IngestTally.site_id == 1) & (IngestTally.count > 4),
                               batch_rows=2)
    assert deleted == 4
    assert _left(app) == [(1, 1), (1, 2), (1, 3), (2, 9), (2, 9)]


def test_a_condition_matching_nothing_deletes_nothing(app):
    _tallies(app, 1, [1, 2])
    with app.app_context(), database.connection_context():
        assert delete_where(IngestTally, IngestTally.site_id == 99) == 0
    assert len(_left(app)) == 2
