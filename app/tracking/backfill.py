"""Upgrade task `derived_columns` (migration 0016): the rows stored before ingest derived the
page and acquisition columns get them as ingest derives them today, and their sessions' visits
are derived again, so the read side, which reads those columns only, counts them.

- Which rows: events with a page URL but no path, and page views without a channel (ingest
  gives every page view one: `Direct` at least). A page URL that is no URL at all has no path
  at ingest either: such rows are read again by a rerun, harmlessly.
- How: with ingest's own derivation, `page_columns` (a pure function of the event's type,
  pageUrl, referrer and its site's domain), so an old row reads exactly as the same event
  stored today would; the rows are updated in groups of equal values.
- Then the visits and visit pages of those rows' sessions are derived again from their events
  up to the rollups' mark (app.rollups.visits.rebuild); the events after the mark are merged
  later, already filled.

Finding the rows reads the event table once (a sequential scan, paid once by the upgrade: its
time at 10 million events is in bench/README.md, "Read side at a glance"); a database whose
rows all came through ingest since 0006 finds none and changes nothing.
"""
from collections import defaultdict

from app.rollups import visits
from app.rollups.mark import mark
from app.storage.dialect import current
from app.tracking.ingest import page_columns
from models import Event, Site

CHUNK = 5_000  # events read and updated at a time


def _lacking():
    return ((Event.page_url.is_null(False) & Event.path.is_null())
            | ((Event.type == "pageview") & Event.channel.is_null()))


def _fill(ids: list[int], domains: dict[int, str], sessions: dict[int, set[str]]) -> None:
    """Derive and store the columns of the events `ids`; note their sessions."""
    groups: dict[tuple, list[int]] = defaultdict(list)
    rows = (Event.select(Event.id, Event.site_id, Event.session_id, Event.type,
                         Event.page_url, Event.referrer)
            .where(Event.id.in_(ids)).tuples())
    for event_id, site_id, session_id, kind, page_url, referrer in rows:
        columns = page_columns(kind, page_url, referrer, domains.get(site_id, ""))
        groups[tuple(sorted(columns.items()))].append(event_id)
        if session_id is not None:
            sessions[site_id].add(session_id)
    for columns, members in groups.items():
        Event.update(dict(columns)).where(Event.id.in_(members)).execute()


def fill_derived_columns() -> None:
    """Fill the derived columns of the rows that lack them, and derive their visits again; run
    inside the upgrade's transaction, before this version's workers start."""
    current().no_statement_timeout()
    ids = [event_id for (event_id,) in Event.select(Event.id).where(_lacking()).tuples()]
    if not ids:
        return
    domains = {site_id: domain for site_id, domain in Site.select(Site.id, Site.domain).tuples()}
    sessions: dict[int, set[str]] = defaultdict(set)
    for start in range(0, len(ids), CHUNK):
        _fill(ids[start:start + CHUNK], domains, sessions)
    through = mark()
    for site_id, site_sessions in sessions.items():
        visits.rebuild(site_id, site_sessions, through=through)
