"""The visit table (models.Visit, app.visits): one row per session of a site, kept up
to date by the store statement of this version on. The rows of the events already stored are
derived by migration 0011, with the other tables kept at ingest (it derived them here before
0011 existed). Run it, as every upgrade, before this version's workers start: the previous
version's workers do not write the table."""
from models import Visit


def up(migrator, db):
    db.create_tables([Visit])  # as the model is now: 0011 adds only the columns it lacks


def down(migrator, db):
    db.execute_sql('DROP TABLE "visit"')
