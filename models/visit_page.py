from peewee import (
    BigAutoField,
    CharField,
    DateTimeField,
    DoubleField,
    FloatField,
    IntegerField,
    TextField,
)

from models.base import BaseModel

NO_PAGE = ""  # the page of events without one: a key column cannot be NULL and still be unique


class VisitPage(BaseModel):
    """One page of one visit (a session of a site), as its stored events on that page make it:
    merged from the events after ingest (app.rollups.visit_pages), so that the
    agent's `event:page` breakdowns read one row per (visit, page) instead of grouping the
    period's events by page and session.

    `page` is the events' page path (Event.path), NO_PAGE for events without one.
    `visitor` and `weight` are the largest of its events', like the visit's (models.Visit);
    events without a session id have no row (the analytics read them from the event table).
    """

    id = BigAutoField()
    site_id = IntegerField()
    session_id = CharField(max_length=128)
    page = TextField()
    visitor = CharField(max_length=128, null=True)
    started_at = DateTimeField()  # its first event's occurred_at
    ended_at = DateTimeField()  # its last event's occurred_at
    events = IntegerField()  # stored events, unweighted
    pageviews = IntegerField()
    events_weight = DoubleField()  # the events' weights summed: the weighted `events`
    pageviews_weight = DoubleField()
    weight = FloatField()  # the largest sampling weight of its events

    class Meta:
        indexes = (
            (("site_id", "session_id", "page"), True),
            (("site_id", "started_at"), False),
        )
