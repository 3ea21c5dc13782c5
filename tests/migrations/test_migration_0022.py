"""Migration 0022: on PostgreSQL the index visit_first_visits holds each visit's weight and
storage-free mark beside its key (INCLUDE), and down() gives back 0019's index; SQLite keeps no
such index, before or after (both backends, a fresh database of each)."""
from playhouse.migrations import Runner

from app.cli.db import MIGRATIONS_DIR
from app.storage.db import is_postgres
from models import database
from tests.fixtures.helpers import db

BEFORE, MIGRATION = "0021_visit_paths", "0022_first_visits_weights"


def definition() -> str | None:
    """The index's definition as PostgreSQL prints it (None: no such index)."""
    if not is_postgres():
        rows = database.execute_sql("SELECT sql FROM sqlite_master WHERE type = 'index' "
                                    "AND name = 'visit_first_visits'").fetchall()
    else:
        rows = database.execute_sql("SELECT indexdef FROM pg_indexes "
                                    "WHERE indexname = 'visit_first_visits'").fetchall()
    return rows[0][0] if rows else None


def test_the_index_includes_the_weight_and_mark_and_down_gives_the_old_one_back(make_app,
                                                                                fresh_url):
    app = make_app(DATABASE_URL=fresh_url)
    with db(app):
        runner = Runner(database.obj, directory=MIGRATIONS_DIR)
        runner.up(target=BEFORE)
        before = definition()
        runner.up(target=MIGRATION)
        after = definition()
        assert MIGRATION in Runner(database.obj, directory=MIGRATIONS_DIR).down(target=BEFORE)
        again = definition()
        postgres = is_postgres()
    if not postgres:
        assert before is after is again is None
        return
    assert "INCLUDE" not in before and "WHERE (pageviews > 0)" in before
    assert after.endswith("INCLUDE (weight, storage_free) WHERE (pageviews > 0)"), after
    assert again == before
