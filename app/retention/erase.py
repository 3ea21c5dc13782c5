"""Erasure (`flask data erase`): one person's events, server events and visitor state, and the
rollups of their events derived again from the events left.

All or nothing, on both databases: everything goes in one transaction, within the rollups'
merge lock (app.rollups.merging.merged), so that an erasure killed midway, or a PostgreSQL that
crashes midway, leaves the person's events and rollup rows all there (a rerun erases them) or
all gone; never events gone while the rollups still count them under the person's ids. One
person's rows are few, so the transaction is short; on SQLite it holds ingest's write lock for
that long.
"""
from peewee import SQL, Expression

from app.retention.deletes import DELETE_BATCH_ROWS, delete_where
from app.rollups import event_slots, visits
from app.rollups.merging import merged
from models import Event, ServerEvent, Visit, database
from models.visitor_state import VisitorState


def anonymous_ids_of(site_id: int, user_id: str) -> list[str]:
    """The anonymous ids (browsers) a user id was seen with: the same person before identify()."""
    query = (Event.select(Event.anonymous_id).distinct()
             .where(Event.site_id == site_id, Event.user_id == user_id,
                    Event.anonymous_id.is_null(False)))
    return [anonymous_id for (anonymous_id,) in query.tuples()]


def erase_user(site_id: int, user_id: str,
               batch_rows: int = DELETE_BATCH_ROWS) -> tuple[list[str], dict[str, int]]:
    """Delete everything stored about an identified user of a site: their events and server
    events, and those of the anonymous ids they were seen with, and their visits (derived
    again from the events left). Returns those anonymous ids and the rows deleted per
    table."""
    with merged() as through, database.atomic():
        browsers = anonymous_ids_of(site_id, user_id)
        events = Event.user_id == user_id
        server_events = ServerEvent.identified_user_id == user_id
        if browsers:
            events |= Event.anonymous_id.in_(browsers)
            server_events |= ServerEvent.anonymous_id.in_(browsers)
        return browsers, _erase(site_id, events, server_events,
                                VisitorState.visitor.in_(browsers), batch_rows, through)


def erase_anonymous(site_id: int, anonymous_id: str,
                    batch_rows: int = DELETE_BATCH_ROWS) -> dict[str, int]:
    """Delete the events and server events of one anonymous id (one browser, or a derived
    storage-free visitor) of a site, and its current visit's row; its visits (with their
    pages) and the quarter-hour counts of its events are derived again from the events
    left."""
    with merged() as through, database.atomic():
        return _erase(site_id, Event.anonymous_id == anonymous_id,
                      ServerEvent.anonymous_id == anonymous_id,
                      VisitorState.visitor == anonymous_id, batch_rows, through)


def _erase(site_id: int, events: Expression, server_events: Expression,
           visitors: Expression, batch_rows: int, through: int) -> dict[str, int]:
    """Within the erasure's transaction; the rollups hold the events up to `through`."""
    events = (Event.site_id == site_id) & events
    sessions = [session_id for (session_id,) in Event.select(Event.session_id).distinct()
                .where(events & Event.session_id.is_null(False)).tuples()]
    slot = event_slots.slot_column(Event.occurred_at)
    slots = [event_slots.as_datetime(value) for (value,) in
             Event.select(slot.alias("slot")).where(events).group_by(SQL('"slot"')).tuples()]
    deleted = {
        Event._meta.table_name: delete_where(Event, events, batch_rows),
        ServerEvent._meta.table_name: delete_where(
            ServerEvent, (ServerEvent.site_id == site_id) & server_events, batch_rows),
        VisitorState._meta.table_name: delete_where(
            VisitorState, (VisitorState.site_id == site_id) & visitors, batch_rows),
    }
    deleted[Visit._meta.table_name] = _erase_visits(site_id, sessions, through)
    event_slots.rebuild(site_id, slots, through=through)  # the erased events' quarter hours
    return deleted


def _erase_visits(site_id: int, sessions: list[str], through: int) -> int:
    """Derive the visits of the erased events' sessions again from the events left up to
    `through` (a visit with none left has no row); how many visit rows went."""
    before = sum(Visit.select().where(
        Visit.site_id == site_id,
        Visit.session_id.in_(sessions[start:start + visits.REBUILD_SESSIONS])).count()
        for start in range(0, len(sessions), visits.REBUILD_SESSIONS))
    return before - visits.rebuild(site_id, sessions, through=through)
