"""What several migrations use, frozen with them: a migration must build the schema it built
when it was written, whatever the app's code (models/, app/) has become since, so none imports
live code. Never change what a migration already uses: add a new name for a new need. (Not a
migration itself: the runner reads the files whose names begin with a digit.)"""
from peewee import Database, Field, PostgresqlDatabase


class JSONField(Field):
    """A JSON document's column: JSONB on PostgreSQL, TEXT on SQLite (app.storage.db maps the type)."""

    field_type = "JSON"


def create_postgres_indexes(db: Database, indexes: dict[str, str]) -> None:
    """A migration's PostgreSQL-only indexes ({name: "ON table (...) ..."}), without a time
    limit: building one reads the whole table. SQLite (the small deployments) keeps its own."""
    if isinstance(db, PostgresqlDatabase):
        db.execute_sql("SET LOCAL statement_timeout = 0")
        for name, definition in indexes.items():
            db.execute_sql(f"CREATE INDEX IF NOT EXISTS {name} {definition}")


def drop_postgres_indexes(db: Database, indexes: dict[str, str]) -> None:
    """What create_postgres_indexes made, for a migration's down()."""
    if isinstance(db, PostgresqlDatabase):
        for name in indexes:
            db.execute_sql(f"DROP INDEX IF EXISTS {name}")


def ask_upgrade_task(db: Database, name: str) -> None:
    """Ask `flask db upgrade` to run the upgrade task `name` (a row of upgrade_task, migration
    0016's table) with the live code, right after the migrations."""
    db.execute_sql(f"INSERT INTO upgrade_task (name) VALUES ('{name}') ON CONFLICT DO NOTHING")


def forget_upgrade_task(db: Database, name: str) -> None:
    """Take back what ask_upgrade_task asked, for a migration's down()."""
    db.execute_sql(f"DELETE FROM upgrade_task WHERE name = '{name}'")
