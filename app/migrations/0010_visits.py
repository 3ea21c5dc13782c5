"""The visit table (models.Visit, app.visits): one row per session of a site, kept up
to date by the store statement of this version on; this migration derives the rows of the
events already stored, reading the whole event table once (bench/README.md gives the time it
took at 10 million events). Run it, as every upgrade, before this version's workers start:
the previous version's workers do not write the table."""
from peewee import PostgresqlDatabase

from app import visits
from models import Visit


def up(migrator, db):
    if isinstance(db, PostgresqlDatabase):
        db.execute_sql("SET LOCAL statement_timeout = 0")
    db.create_tables([Visit])
    visits.rebuild()


def down(migrator, db):
    db.execute_sql('DROP TABLE "visit"')
