"""The tables kept up to date at ingest (app.visits with app.visit_pages, app.event_slots),
derived again from the stored events: for a migration that adds one, and for rows written
beside the store path (tests, the benchmark's seeding)."""
from app import event_slots, visits


def rebuild(site_id: int | None = None) -> int:
    """Derive every rollup of a site (every site: None); how many visit rows there are."""
    count = visits.rebuild(site_id)
    event_slots.rebuild(site_id)
    return count
