"""The one read entry of the agent's tools (`answer`): every event stored before the call, all
figures from the same events, never held up by another session. Its steps, in order:

1. Merge (app.rollups.merging), waiting at most EGIS_ROLLUP_WAIT_SECONDS for the inserts in
   flight and for another merge. When they outlast it, the answer counts what is merged and
   carries a warning (STALE) rather than wait: an idle transaction elsewhere must not stall
   every answer.
2. Replica or primary: the read replica once it has replayed past that merge, else the primary
   (app.storage.replica). When the primary cannot be reached (a failover's seconds: connecting,
   merging or asking its WAL position), the replica unchecked, with a warning (PRIMARY_AWAY)
   instead of a 503.
3. One snapshot: one read-only transaction (app.storage.dialect.read_transaction), whose event
   scans stop at the mark it reads in that snapshot (app.rollups.mark.counting_merged): events
   committed after the merge count in no figure, not in page views while missing in visits.
4. The time limit: the transaction's statement timeout (a stopped statement raises
   app.storage.dialect.QueryTimeoutError).
5. Run the tool's reads; those a call makes `concurrently` share its snapshot, and what they
   compute twice (`memoized`) is computed once.
"""
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar, copy_context
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from flask import current_app
from peewee import InterfaceError, OperationalError

from app.rollups.mark import counting_merged
from app.rollups.merging import merge
from app.runtime.metrics import ROLLUP_WAIT_TIMEOUTS
from app.storage import replica
from app.storage.db import primary_unavailable
from app.storage.dialect import export_snapshot, read_transaction, reads_in_parallel
from models import database

T = TypeVar("T")

PRIMARY_AWAY = ("The primary database cannot be reached (a failover): this answer is read on a "
                "replica, and may miss the events stored in the last few seconds.")
STALE = ("Events stored in the last few seconds may be missing: a transaction writing to the "
         "event table was still open after {seconds:g} s, so this answer counts the events "
         "merged before it.")


def answer(run: Callable[[], T], timeout_seconds: float | None) -> tuple[T, list[str]]:
    """`run()` (a tool call's reads) through the steps above, with the warnings the answer must
    carry."""
    wait_seconds = float(current_app.config["ROLLUP_WAIT_SECONDS"])
    warnings = []

    def in_one_snapshot() -> T:
        with reading(timeout_seconds):  # 3, 4
            return run()  # 5

    try:  # 1, unless the primary is known to be away (a failover's seconds)
        merged = not primary_unavailable() and merge(wait_seconds)
    except (OperationalError, InterfaceError):
        merged = False
        if not replica.configured():
            raise
    if primary_unavailable() or (not merged and _primary_gone()):
        # 2 without the primary: on the replica, unchecked, and the answer says so
        return replica.read_without_primary(in_one_snapshot), [PRIMARY_AWAY]
    if not merged:
        ROLLUP_WAIT_TIMEOUTS.inc()
        warnings.append(STALE.format(seconds=wait_seconds))
    return replica.read(in_one_snapshot), warnings  # 2: run on the replica or the primary


def _primary_gone() -> bool:
    """Whether the primary just failed this request (its connection closed under it)."""
    return replica.configured() and (database.is_closed() or database.connection().closed != 0)


@dataclass(frozen=True)
class _Call:
    """The read in progress in this context: what `memoized` keeps, the time limit, and
    whether it is one of `concurrently`'s calls (which run no `concurrently` of their own)."""

    memo: dict[Hashable, Any]
    timeout_seconds: float | None
    within: bool = False


_call: ContextVar[_Call | None] = ContextVar("call", default=None)


def memoized(key: Hashable, compute: Callable[[], Any]) -> Any:
    """`compute()`, once per key within one `reading` (one tool call, one snapshot): what
    several statements of a call need, such as the visits across a period's edges."""
    call = _call.get()
    if call is None:
        return compute()
    if key not in call.memo:
        call.memo[key] = compute()
    return call.memo[key]


@contextmanager
def reading(timeout_seconds: float | None = None, memo: dict[Hashable, Any] | None = None,
            snapshot: str | None = None) -> Iterator[None]:
    """Steps 3 and 4 of `answer`: one read-only transaction with its time limit, so that its
    statements see one snapshot (`snapshot`, another transaction's, exported, for
    `concurrently`), in which the event scans stop at the rollups' mark. What `memoized`
    computes lives as long as the transaction, or as the call's whose `memo` a concurrent read
    shares."""
    outer = _call.get()
    token = _call.set(_Call({} if memo is None else memo, timeout_seconds,
                            outer is not None and outer.within))
    try:
        with read_transaction(timeout_seconds, snapshot), counting_merged():
            yield
    finally:
        _call.reset(token)


def concurrently(*calls: Callable[[], Any]) -> list[Any]:
    """The calls' results, the reads of one tool call run at once on PostgreSQL: the first on
    the caller's transaction, each other one in a thread on a connection and read transaction
    of its own (`reading`, with the caller's time limit). A statement runs on one core, so a
    comparison period read beside the queried one is not waited for after it (measured:
    bench/README.md, "Analytics: the agent read surface"). At most one level: a call made this
    way runs its own `concurrently` in turn, so a request holds at most two connections of the
    pool, and a worker's 4 threads (deploy/) at most the pool's 8 (app.storage.db). SQLite (one
    writer, small data) and calls outside `reading` run in turn. An error in any call is raised
    here."""
    if len(calls) < 2 or not can_run_concurrently():
        return [call() for call in calls]
    call = _call.get()
    snapshot = memoized("snapshot", export_snapshot)  # this call's: same events, same rollups

    def beside(run: Callable[[], Any]) -> Any:
        with database.connection_context(), reading(call.timeout_seconds, call.memo, snapshot):
            return run()

    token = _call.set(replace(call, within=True))
    try:
        with ThreadPoolExecutor(max_workers=len(calls) - 1) as pool:
            others = [pool.submit(copy_context().run, beside, run) for run in calls[1:]]
            first = calls[0]()
            return [first, *[future.result() for future in others]]
    finally:
        _call.reset(token)


def can_run_concurrently() -> bool:
    """Whether `concurrently` would run its calls at once here."""
    call = _call.get()
    return reads_in_parallel() and call is not None and not call.within
