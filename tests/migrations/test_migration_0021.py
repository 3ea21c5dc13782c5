"""Migration 0021 and its upgrade task (app.rollups.visit_paths.derive_every_head): on a database
holding visits stored before it (migrated to 0020), `flask db upgrade` adds the path heads and
derives them for every visit from its events, as the rebuild derives them; the events after
are merged, heads and all; down() takes the columns away (both backends)."""
from datetime import timedelta

from playhouse.migrations import Runner

from app.cli.db import MIGRATIONS_DIR
from app.rollups import merging, visit_paths
from app.rollups.mark import set_mark
from models import Event, UpgradeTask, Visit, database
from models.site import utcnow
from tests.fixtures.helpers import db

BEFORE, MIGRATION = "0020_storage_free_marker", "0021_visit_paths"
HEAD_COLUMNS = {"path_head", "path_end_at", "path_weight"}


def columns() -> set[str]:
    return {column.name for column in database.get_columns("visit")}


def heads() -> dict[str, tuple]:
    return {row.session_id: (visit_paths.decoded(row.path_head), row.path_end_at,
                             row.path_weight) for row in Visit.select()}


def test_the_upgrade_derives_every_visits_head_and_down_takes_them_away(make_app, fresh_url):
    app = make_app(DATABASE_URL=fresh_url)
    start = utcnow().replace(microsecond=0) - timedelta(hours=2)
    nodes = [("s-1", "pageview", "/", None), ("s-1", "pageview", "/", None),
             ("s-1", "goal", None, "Signup"), ("s-1", "pageview", "/pricing", None),
             ("s-2", "pageview", "/blog", None)]
    with db(app):
        Runner(database.obj, directory=MIGRATIONS_DIR).up(target=BEFORE)
        assert not HEAD_COLUMNS & columns()
        p = database.param
        # rows as the version before stored them (its events and visit rows), through SQL
        for minute, (session, kind, path, name) in enumerate(nodes):
            at = start + timedelta(minutes=minute)
            database.execute_sql(
                "INSERT INTO event (site_id, session_id, anonymous_id, type, path, name, "
                f"occurred_at, received_at, weight) VALUES (1, {p}, 'a-1', {p}, {p}, {p}, {p}, "
                f"{p}, 1)", (session, kind, path, name, at, at))
            if (session, minute) in (("s-1", 0), ("s-2", 4)):  # its visit row, as merged
                database.execute_sql(
                    "INSERT INTO visit (site_id, session_id, visitor, started_at, ended_at, "
                    "events, pageviews, interactions, weight) VALUES "
                    f"(1, {p}, 'a-1', {p}, {p}, 1, 1, 0, 1)", (session, at, at))
        set_mark(len(nodes))  # every event merged by the version before
        UpgradeTask.delete().execute()  # 0016's task, done long ago
    runner = app.test_cli_runner()
    outputs = [runner.invoke(args=["db", "upgrade"]).output.strip() for _ in range(2)]
    # it first (those after it too), then nothing
    assert outputs[0].removeprefix("Applied: ").split(", ")[0] == MIGRATION
    assert outputs[1] == "Schema is up to date."
    with db(app):
        assert UpgradeTask.select().count() == 0
        derived = heads()
        assert derived == {"s-1": (["/", "goal:Signup", "/pricing"], start + timedelta(minutes=3),
                                   1.0),
                           "s-2": (["/blog"], start + timedelta(minutes=4), 1.0)}
        merging.rebuild()
        assert heads() == derived
        later = start + timedelta(minutes=9)
        Event.create(site_id=1, session_id="s-2", anonymous_id="a-1", type="pageview",
                     path="/docs", occurred_at=later, received_at=later, weight=1)
        merging.merge()
        assert heads()["s-2"] == (["/blog", "/docs"], later, 1.0)
        assert MIGRATION in Runner(database.obj, directory=MIGRATIONS_DIR).down(target=BEFORE)
        assert not HEAD_COLUMNS & columns()
