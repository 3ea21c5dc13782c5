"""app.storage.dialect's read transaction tells a statement the database refuses for its shape
(QueryShapeError) from a database that fails (its OperationalError, a 503 at the endpoint),
and renders long lists of conditions as trees both databases accept."""
from datetime import datetime

import pytest
from peewee import InterfaceError, OperationalError

from app.rollups import merging
from app.storage.dialect import QueryShapeError, all_of, any_of, read_transaction
from models import Event, database
from tests.fixtures.database import BACKEND
from tests.fixtures.helpers import db

# A statement too deep for the database's parser: SQLite's stack takes 86 nested parentheses,
# PostgreSQL's expression stack (max_stack_depth) not 100,000 terms of one sum.
TOO_DEEP = ("SELECT " + "(" * 100 + "1" + ")" * 100 if BACKEND == "sqlite"
            else "SELECT " + " + ".join(["1"] * 100_000))
SHALLOW = "SELECT " + "(" * 10 + "1" + ")" * 10


def test_a_statement_too_deep_is_a_query_shape_error(app):
    with db(app):
        with read_transaction(5):
            assert database.execute_sql(SHALLOW).fetchone() == (1,)
        with pytest.raises(QueryShapeError), read_transaction(5):
            database.execute_sql(TOO_DEEP)


def test_a_failing_database_stays_an_operational_error(app):
    """A session the server ends (PostgreSQL; the rollback then finds the connection closed), a
    table that is not there (SQLite): the errors the endpoint answers 503, not a shape."""
    failing = ("SELECT pg_terminate_backend(pg_backend_pid())" if BACKEND == "postgres"
               else "SELECT * FROM no_such_table")
    with db(app), pytest.raises((OperationalError, InterfaceError)), read_transaction(5):
        database.execute_sql(failing)


@pytest.mark.parametrize("count", [1, 2, 99, 100, 1000])
def test_long_lists_of_conditions_are_one_statement(app, std_site, count):
    """`count` conditions or-ed, and and-ed, over two events: one at the last path, one
    elsewhere."""
    paths = [f"/p{n}" for n in range(count)]
    at = datetime(2026, 3, 1)
    with db(app):
        Event.insert_many([{"site_id": std_site.site.id, "type": "pageview", "path": path,
                            "occurred_at": at, "received_at": at}
                           for path in (paths[-1], "/elsewhere")]).execute()
        merging.rebuild()
        with read_transaction(5):
            either = Event.select(Event.path).where(any_of([Event.path == p for p in paths]))
            assert [event.path for event in either] == [paths[-1]]
            every = Event.select(Event.path).where(all_of([Event.path != p for p in paths]))
            assert [event.path for event in every] == ["/elsewhere"]


def test_firsts_keeps_each_groups_first_row_by_its_order(app, std_site):
    """Events of three sessions: the first of each (by time, then path) whatever the insert
    order, a tie in time broken by the path, as visit:visitor_type breaks one by session id."""
    from peewee import Select

    from app.storage.dialect import firsts

    t = datetime(2026, 3, 1)
    rows = [("s1", "/b", t), ("s1", "/a", t), ("s1", "/0", t.replace(hour=1)),
            ("s2", "/z", t.replace(hour=2)), ("s2", "/y", t.replace(hour=3)), ("s3", "/x", t)]
    with db(app):
        Event.insert_many([{"site_id": std_site.site.id, "type": "pageview", "session_id": s,
                            "path": path, "occurred_at": at, "received_at": at}
                           for s, path, at in rows]).execute()
        ctes, first = firsts(Event.select(Event.session_id, Event.path).where(
            Event.site_id == std_site.site.id), Event.session_id,
            [Event.occurred_at, Event.path], ["session_id", "path"], "first_events")
        found = Select([first], [first.c.session_id, first.c.path]).with_cte(*ctes, first)
        assert sorted(found.tuples().execute(database)) == [
            ("s1", "/a"), ("s2", "/z"), ("s3", "/x")]
