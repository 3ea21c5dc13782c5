"""What an answer of the agent's tools reads, and from where: every event stored before the
call, all figures from the same events, never held up by another session.

1. Merge first (app.rollups.merging), waiting at most EGIS_ROLLUP_WAIT_SECONDS for the inserts
   in flight and for another merge. When they outlast it, the answer counts what is merged and
   carries a warning (STALE) rather than wait: an idle transaction elsewhere must not stall
   every answer.
2. Read on the read replica once it has replayed past that merge, else on the primary
   (app.storage.replica).
3. The read itself is one transaction, one snapshot (app.analytics.base.reading), whose event
   scans stop at the mark it reads in that snapshot (app.rollups.mark.counting_merged): events
   committed after the merge count in no figure, not in page views while missing in visits.
"""
from collections.abc import Callable
from typing import TypeVar

from flask import current_app

from app.rollups.merging import merge
from app.runtime.metrics import ROLLUP_WAIT_TIMEOUTS
from app.storage import replica

T = TypeVar("T")

STALE = ("Events stored in the last few seconds may be missing: a transaction writing to the "
         "event table was still open after {seconds:g} s, so this answer counts the events "
         "merged before it.")


def answer(read: Callable[[], T]) -> tuple[T, list[str]]:
    """`read()` (a whole read: its transaction and statements) after merging what is waiting,
    on the replica or the primary; with the warnings the answer must carry."""
    seconds = float(current_app.config["ROLLUP_WAIT_SECONDS"])
    warnings = []
    if not merge(seconds):
        ROLLUP_WAIT_TIMEOUTS.inc()
        warnings.append(STALE.format(seconds=seconds))
    return replica.read(read), warnings
