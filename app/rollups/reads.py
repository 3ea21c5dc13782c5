"""What an answer of the agent's tools reads, and from where: every event stored before the
call, all figures from the same events, never held up by another session.

1. Merge first (app.rollups.merging), waiting at most EGIS_ROLLUP_WAIT_SECONDS for the inserts
   in flight and for another merge. When they outlast it, the answer counts what is merged and
   carries a warning (STALE) rather than wait: an idle transaction elsewhere must not stall
   every answer.
2. Read on the read replica once it has replayed past that merge, else on the primary
   (app.rollups.replica).
3. The read itself is one transaction, one snapshot (app.analytics.base.reading), whose event
   scans stop at the mark it reads in that snapshot (app.rollups.mark.counting_merged): events
   committed after the merge count in no figure, not in page views while missing in visits.
"""
from collections.abc import Callable
from typing import TypeVar

from flask import current_app
from peewee import InterfaceError, OperationalError

from app.db import primary_unavailable
from app.metrics import ROLLUP_WAIT_TIMEOUTS
from app.rollups import replica
from app.rollups.merging import merge
from models import database

T = TypeVar("T")

PRIMARY_AWAY = ("The primary database cannot be reached (a failover): this answer is read on a "
                "replica, and may miss the events stored in the last few seconds.")
STALE = ("Events stored in the last few seconds may be missing: a transaction writing to the "
         "event table was still open after {seconds:g} s, so this answer counts the events "
         "merged before it.")


def answer(read: Callable[[], T]) -> tuple[T, list[str]]:
    """`read()` (a whole read: its transaction and statements) after merging what is waiting,
    on the replica or the primary; with the warnings the answer must carry."""
    seconds = float(current_app.config["ROLLUP_WAIT_SECONDS"])
    warnings = []
    try:
        merged = not primary_unavailable() and merge(seconds)
    except (OperationalError, InterfaceError):
        merged = False
        if not replica.configured():
            raise
    if primary_unavailable() or (not merged and _primary_gone()):
        return replica.read_without_primary(read), [PRIMARY_AWAY]
    if not merged:
        ROLLUP_WAIT_TIMEOUTS.inc()
        warnings.append(STALE.format(seconds=seconds))
    return replica.read(read), warnings


def _primary_gone() -> bool:
    """Whether the primary just failed this request (its connection closed under it)."""
    return replica.configured() and (database.is_closed() or database.connection().closed != 0)
