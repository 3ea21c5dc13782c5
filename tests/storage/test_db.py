"""The models' database handle (app.storage.db): SQLite with WAL, a busy timeout and foreign keys;
PostgreSQL pooled with egis's statement and idle-transaction timeouts; statements prepared once
per connection, on first use."""
import pytest
from peewee import SqliteDatabase

from app.storage.db import (
    STATEMENT_MILLISECONDS,
    PostgresPool,
    PreparedStatement,
    make_database,
    without_database,
)
from models import database
from tests.fixtures.database import BACKEND, PG_ADMIN_URL, _postgres_reachable


def test_sqlite_gets_its_folder_wal_a_busy_timeout_and_foreign_keys(tmp_path):
    path = tmp_path / "not" / "yet" / "egis.sqlite3"
    handle = make_database(f"sqlite:///{path}")
    assert isinstance(handle, SqliteDatabase)
    with handle.connection_context():
        pragmas = [handle.execute_sql(f"PRAGMA {name}").fetchone()[0]
                   for name in ("journal_mode", "busy_timeout", "foreign_keys")]
    assert pragmas == ["wal", 10000, 1]
    assert path.exists()


def test_a_url_of_another_database_is_refused():
    with pytest.raises(ValueError, match=r"postgresql://\.\.\. or sqlite:///"):
        make_database("mysql://egis@db.example/egis")


def test_postgresql_is_pooled_with_egis_timeouts():
    if not _postgres_reachable():
        pytest.skip("no PostgreSQL server reachable at EGIS_TEST_PG_ADMIN_URL")
    handle = make_database(PG_ADMIN_URL, max_connections=2, idle_transaction_seconds=7)
    assert isinstance(handle, PostgresPool)
    try:
        with handle.connection_context():
            settings = [handle.execute_sql(f"SHOW {name}").fetchone()[0]
                        for name in ("statement_timeout", "idle_in_transaction_session_timeout")]
    finally:
        handle.close_all()
    assert settings == [f"{STATEMENT_MILLISECONDS // 1000}s", "7s"]


def test_a_prepared_statement_is_prepared_on_first_use_and_reused(app):
    if BACKEND != "postgres":
        pytest.skip("PREPARE is PostgreSQL's; SQLite caches its statements itself")
    statement = PreparedStatement("egis_test_plus_one", (("value", "int"),), "SELECT $1 + 1")
    with app.app_context(), database.connection_context():
        assert statement.execute({"value": 41}).fetchone()[0] == 42
        assert statement.execute({"value": 1}).fetchone()[0] == 2  # prepared: EXECUTE alone
        prepared = database.execute_sql("SELECT count(*) FROM pg_prepared_statements "
                                        "WHERE name = 'egis_test_plus_one'").fetchone()[0]
        database.execute_sql("DEALLOCATE egis_test_plus_one")
    assert prepared == 1


def test_a_view_marked_without_database_is_served_without_a_connection(app):
    assert without_database(lambda: None).without_database is True
    with app.test_request_context("/healthz"):
        app.preprocess_request()
        assert database.is_closed()
    with app.test_request_context("/api/validate"):
        app.preprocess_request()
        assert not database.is_closed()
        database.close()
