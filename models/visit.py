from peewee import (
    SQL,
    BigAutoField,
    BooleanField,
    CharField,
    DateTimeField,
    DoubleField,
    FloatField,
    IntegerField,
    TextField,
)

from models.base import BaseModel

# The event types a visit's `interactions` counts: a visit with one is no bounce.
INTERACTIONS = ("click", "form_submit", "custom", "goal", "heartbeat")
# The visit context of a request (app.context.request), the visit's from its first page view.
CONTEXT_COLUMNS = ("country", "device", "browser", "browser_version", "os", "os_version",
                   "language", "screen")


class Visit(BaseModel):
    """One visit (a session id of a site) as its stored events make it, merged from the events
    after ingest (app.rollups.visits), so that the agent's visit figures
    read one row per visit instead of grouping the period's events by session.

    The analytics read a period's visits from here: the rows inside the period as they are, and the
    few that cross its edges derived from their events in the period (app.analytics.period_rows,
    visits_cte), so a visit is still "a session id with a page view in the period, with the values
    of its first page view in the period" (docs/ARCHITECTURE.md, "Visits"). The entry columns
    (entry_page, source ... utm_term and the request context country ... screen) are those of its
    first page view, exit_page its last page view's path. Rows without a page view (`pageviews` 0)
    are sessions that are not (yet) visits.
    """

    id = BigAutoField()
    site_id = IntegerField()  # a plain column, like the other ingest-path tables
    session_id = CharField(max_length=128)
    visitor = CharField(max_length=128, null=True)  # the largest anonymous id of its events
    started_at = DateTimeField()  # its first event's occurred_at
    ended_at = DateTimeField()  # its last event's occurred_at
    events = IntegerField()  # stored events, unweighted
    pageviews = IntegerField()
    interactions = IntegerField()  # events of INTERACTIONS
    weight = FloatField()  # the largest sampling weight of its events
    # (defaults in the table too: a worker of the previous version, which writes neither,
    # can still store a batch during an upgrade)
    heartbeats = DoubleField(default=0, constraints=[SQL("DEFAULT 0")])  # heartbeats' weights
    # its events all carry one anonymous id (or none) and one weight: then each of its pages
    # (models.VisitPage) has the visit's visitor and weight
    uniform = BooleanField(default=True, constraints=[SQL("DEFAULT TRUE")])
    # uniform and a visit (a page view): its page rows need nothing of its visit row
    plain = BooleanField(default=True, constraints=[SQL("DEFAULT TRUE")])
    lasting = BooleanField(default=False, constraints=[SQL("DEFAULT FALSE")])  # a day or more
    # True when any of its events is storage-free (models.Event.storage_free), else NULL
    storage_free = BooleanField(null=True)
    entry_at = DateTimeField(null=True)  # the first page view's occurred_at
    entry_page = TextField(null=True)
    exit_at = DateTimeField(null=True)  # the last page view's occurred_at
    exit_page = TextField(null=True)
    country = CharField(max_length=2, null=True)
    device = CharField(max_length=16, null=True)
    browser = CharField(max_length=64, null=True)
    browser_version = CharField(max_length=16, null=True)
    os = CharField(max_length=64, null=True)
    os_version = CharField(max_length=16, null=True)
    language = CharField(max_length=8, null=True)
    screen = CharField(max_length=8, null=True)
    source = TextField(null=True)
    channel = CharField(max_length=32, null=True)
    referrer = TextField(null=True)  # the entry page view's referrer_url
    utm_source = TextField(null=True)
    utm_medium = TextField(null=True)
    utm_campaign = TextField(null=True)
    utm_content = TextField(null=True)
    utm_term = TextField(null=True)
    # its path head (app.rollups.visit_paths): its first nodes (page views, goals) folded, a
    # JSON array; NULL until a node is merged. Kept by the merge, never by the upsert's rules.
    path_head = TextField(null=True)
    path_end_at = DateTimeField(null=True)  # its last node's occurred_at
    path_weight = FloatField(null=True)  # the largest weight of its nodes

    class Meta:
        indexes = (
            (("site_id", "session_id"), True),
            (("site_id", "started_at"), False),
        )
        # and, made by migration 0011, the partial indexes visit_long (lasting) and
        # visit_irregular (NOT plain) on (site_id, started_at); by 0019, visit_first_visits on
        # (site_id, visitor, started_at, session_id) of the visits (pageviews > 0), PostgreSQL only
