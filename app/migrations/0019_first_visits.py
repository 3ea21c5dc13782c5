"""PostgreSQL: the visits of each visitor in time order, visit:visitor_type's first visits.

A visit is `new` when it is the first visit egis holds of its visitor, in any period
(app.analytics.period_rows.typed_visits), so a breakdown by visit:visitor_type reads every visit
of the site with a page view, by visitor, then start, then session id. This index holds exactly
those, in that order: PostgreSQL reads the first of each visitor off it (DISTINCT ON, an
index-only scan) in 1.2 s for 984,000 visits, where sorting them for ROW_NUMBER took 4.1 s
(10 M events). SQLite gains nothing from it (its ROW_NUMBER over 98,000 visits took 0.43 s with
it, 0.35 without) and, given it, joined the first visits without an automatic index: the
breakdown ran past its time limit. So it is PostgreSQL's alone. Building it reads the visit
table once.
"""
from app.migrations.frozen import create_postgres_indexes, drop_postgres_indexes

INDEXES = {"visit_first_visits": "ON visit (site_id, visitor, started_at, session_id) "
                                 "WHERE pageviews > 0"}


def up(migrator, db):
    create_postgres_indexes(db, INDEXES)


def down(migrator, db):
    drop_postgres_indexes(db, INDEXES)
