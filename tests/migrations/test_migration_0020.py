"""Migration 0020: the storage-free mark on the event and visit tables of a database holding rows
stored before it (migrated to 0019). `flask db upgrade` applies it (and those after it), then
nothing; the rows already there read NULL (which of them came storage-free is not known), new
rows take the mark, and down() takes the columns away again. On both backends (a fresh database
of each)."""
from playhouse.migrations import Runner

from app.cli.db import MIGRATIONS_DIR
from models import Event, Visit, database
from models.site import utcnow
from tests.fixtures.helpers import db

BEFORE, MIGRATION = "0019_first_visits", "0020_storage_free_marker"


def columns(table: str) -> set[str]:
    return {column.name for column in database.get_columns(table)}


def test_the_mark_is_added_null_on_the_rows_there_and_taken_away(make_app, fresh_url):
    app = make_app(DATABASE_URL=fresh_url)
    with db(app):
        Runner(database.obj, directory=MIGRATIONS_DIR).up(target=BEFORE)
        assert "storage_free" not in columns("event") | columns("visit")
        now, p = utcnow(), database.param
        # rows as the version before stored them: the columns it knew, through SQL of its own
        database.execute_sql(
            "INSERT INTO event (site_id, session_id, anonymous_id, type, occurred_at, "
            f"received_at, weight) VALUES (1, 's-1', 'a-1', 'pageview', {p}, {p}, 1)",
            (now, now))
        database.execute_sql(
            "INSERT INTO visit (site_id, session_id, visitor, started_at, ended_at, events, "
            f"pageviews, interactions, weight) VALUES (1, 's-1', 'a-1', {p}, {p}, 1, 1, 0, 1)",
            (now, now))
    runner = app.test_cli_runner()
    outputs = [runner.invoke(args=["db", "upgrade"]).output.strip() for _ in range(2)]
    # it first (0021 after it), then nothing
    assert outputs[0].removeprefix("Applied: ").split(", ")[0] == MIGRATION
    assert outputs[1] == "Schema is up to date."
    with db(app):
        assert [row.storage_free for row in Event.select()] == [None]
        assert [row.storage_free for row in Visit.select()] == [None]
        Event.create(site_id=1, session_id="s-2", anonymous_id="derived", type="pageview",
                     occurred_at=now, received_at=now, storage_free=True)
        assert [row.storage_free for row in Event.select().order_by(Event.id)] == [None, True]
        assert MIGRATION in Runner(database.obj, directory=MIGRATIONS_DIR).down(target=BEFORE)
        assert "storage_free" not in columns("event") | columns("visit")
