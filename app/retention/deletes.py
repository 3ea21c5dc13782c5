"""Deleting rows in batches, found by walking the primary key upwards (keyset), so each row is
read once however many batches it takes."""
from peewee import Expression, Model

from models import database

DELETE_BATCH_ROWS = 2000


def delete_where(model: type[Model], condition: Expression,
                 batch_rows: int = DELETE_BATCH_ROWS) -> int:
    """Delete `model`'s rows matching `condition`, `batch_rows` per transaction (a savepoint
    within the caller's); how many went."""
    deleted, after = 0, None
    while True:
        query = model.select(model.id).where(condition).order_by(model.id).limit(batch_rows)
        if after is not None:
            query = query.where(model.id > after)
        ids = [row_id for (row_id,) in query.tuples()]
        if not ids:
            return deleted
        with database.atomic():
            # The condition again: it also lets PostgreSQL skip partitions it cannot match.
            deleted += model.delete().where(model.id.in_(ids), condition).execute()
        after = ids[-1]
