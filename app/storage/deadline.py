"""The request's deadline on its database waits (EGIS_REQUEST_DEADLINE_SECONDS, PostgreSQL).

statement_timeout does not cover everything a request can wait for: a COMMIT waiting for a
synchronous standby that is gone ignores it, and so does a read from a socket whose server
vanished or froze (a zombie primary whose Patroni died, a failover). So each request's primary
connection is watched: `DEADLINE_LEAD_SECONDS` before the request's deadline the watchdog asks
the server to cancel what runs (libpq's PQcancel), and at the deadline,
if the request still holds the connection, it shuts the socket down, which wakes the request
thread with an error whatever the server does. Either way the request answers 503 with
Retry-After (app.web.errors) and the connection is closed, never handed to another request (a
cancel sent late could hit that one's statement).

A COMMIT that was cancelled while it waited for the standby has committed locally but not on
the standby: PostgreSQL answers it with the warning "canceling wait for synchronous
replication" and success. A failover can lose such a transaction, so `raise_if_unreplicated`
turns that warning into an error (503): egis acknowledges nothing a standby does not hold.

One watchdog thread per process sleeps until the earliest deadline; requests that end in time
cost a heap push and a flag. PQcancel is thread-safe (its own connection to the server); the
socket is shut down through a duplicate of its descriptor.
"""
import contextlib
import ctypes
import heapq
import itertools
import os
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from time import monotonic
from typing import Any

from peewee import InternalError, OperationalError

DEFAULT_SECONDS = 10.0
DEADLINE_LEAD_SECONDS = 1.0  # the cancel's head start on the socket's shutdown
UNREPLICATED = "wait for synchronous replication"  # in PostgreSQL's warning, any language: no
MESSAGE_DEADLINE = "the request's database deadline passed"


READ_ONLY = "25006"  # read_only_sql_transaction: the server is (now) a standby


class UnreplicatedCommitError(OperationalError):
    """A COMMIT answered with the warning that its wait for the standby was cancelled."""


class DeadlinePassedError(OperationalError):
    """The request's deadline passed while it waited for another thread's commit."""


class NoLongerPrimaryError(OperationalError):
    """The connection's server refuses writes: it was demoted, or is a standby."""


@dataclass(order=True)
class Watch:
    due: float
    order: int
    connection: Any = field(compare=False)
    released: bool = field(default=False, compare=False)
    cancelled: bool = field(default=False, compare=False)
    expired: bool = field(default=False, compare=False)


class Watchdog:
    """Cancels, then cuts, the connections of requests past their deadline; one per process."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._heap: list[Watch] = []
        self._order = itertools.count()
        self._pid: int | None = None

    def watch(self, connection: Any, due: float) -> Watch:
        """Watch `connection` (psycopg2's) until `release`, at most until `due` (monotonic)."""
        entry = Watch(due, next(self._order), connection)
        with self._changed:
            if self._pid != os.getpid():  # first use in this process (gunicorn forks)
                self._pid, self._heap = os.getpid(), []
                threading.Thread(target=self._run, name="egis-deadline", daemon=True).start()
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:
                self._changed.notify()
        return entry

    def release(self, entry: Watch) -> bool:
        """The request is done with the connection; True if the watchdog acted on it (then
        the caller closes it)."""
        with self._changed:
            entry.released = True
            if entry.cancelled:
                self._changed.notify_all()  # its _expire waits for this
            return entry.cancelled or entry.expired

    def _run(self) -> None:
        while True:
            with self._changed:
                while self._heap and self._heap[0].released:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._changed.wait()
                    continue
                first = self._heap[0]
                left = first.due - DEADLINE_LEAD_SECONDS - monotonic()
                if left > 0:
                    self._changed.wait(left)
                    continue
                heapq.heappop(self._heap)
                first.cancelled = True
            threading.Thread(target=self._expire, args=(first,), name="egis-deadline-cancel",
                             daemon=True).start()

    def _expire(self, entry: Watch) -> None:
        """Cancel what runs on the connection; at the deadline, cut it if still held."""
        with self._changed:
            handle = None if entry.released else _cancel_handle(entry.connection)
        if handle is not None:  # PQcancel connects to the server: it may hang where it hangs
            threading.Thread(target=_cancel, args=(handle,), name="egis-cancel",
                             daemon=True).start()
        with self._changed:
            while not entry.released and monotonic() < entry.due:
                self._changed.wait(entry.due - monotonic())
            if entry.released:
                return
            entry.expired = True
            _shut_down(entry.connection)


class _Libpq:
    """libpq's cancel calls, through ctypes on the libpq psycopg2 itself loaded.

    psycopg2's own `connection.cancel()` keeps the GIL while PQcancel waits for the server: on a
    frozen server (SIGSTOP) it stopped every thread of the worker, the request's own included,
    for as long as the server stayed frozen (measured: no other thread ran for 30 s). ctypes
    releases the GIL around the call, so a cancel that hangs hangs alone, in its own thread.
    """

    def __init__(self) -> None:
        self._lib: Any = None
        self._loaded = False

    def lib(self) -> Any:
        if not self._loaded:
            self._loaded = True
            with contextlib.suppress(OSError, AttributeError):
                import psycopg2  # noqa: F401  (loads its libpq into the process)

                with open("/proc/self/maps") as maps:
                    paths = [line.split()[-1] for line in maps if "/libpq" in line]
                if paths:
                    lib = ctypes.CDLL(paths[0])
                    lib.PQgetCancel.restype = ctypes.c_void_p
                    lib.PQgetCancel.argtypes = [ctypes.c_void_p]
                    lib.PQcancel.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
                    lib.PQfreeCancel.argtypes = [ctypes.c_void_p]
                    self._lib = lib
        return self._lib


_libpq = _Libpq()


def _cancel_handle(connection: Any) -> int | None:
    """libpq's PGcancel for `connection` (made without I/O: the address and key it holds)."""
    lib = _libpq.lib()
    pointer = getattr(connection, "pgconn_ptr", None)
    if lib is None or not pointer:
        return None
    return lib.PQgetCancel(pointer) or None


def _cancel(handle: int) -> None:
    lib = _libpq.lib()
    buffer = ctypes.create_string_buffer(256)
    try:
        lib.PQcancel(handle, buffer, len(buffer))
    finally:
        lib.PQfreeCancel(handle)


def _shut_down(connection: Any) -> None:
    """Shut the connection's socket down: a read blocked on it returns at once, with an error."""
    with contextlib.suppress(Exception):
        duplicate = socket.socket(fileno=os.dup(connection.fileno()))
        try:
            duplicate.shutdown(socket.SHUT_RDWR)
        finally:
            duplicate.close()


_watchdog = Watchdog()


def watch(connection: Any, due: float) -> Watch:
    return _watchdog.watch(connection, due)


def release(entry: Watch) -> bool:
    return _watchdog.release(entry)


@contextlib.contextmanager
def watching(connection: Any, seconds: float) -> Iterator[None]:
    """Watch `connection` for what the block does with it, at most `seconds` (then it is
    cancelled, then cut: the block raises)."""
    entry = watch(connection, monotonic() + seconds)
    try:
        yield
    finally:
        release(entry)


def raise_if_unreplicated(connection: Any) -> None:
    """UnreplicatedCommitError when the server warned that a commit's wait for the synchronous
    standby was cancelled; the connection's notices are read once."""
    notices = getattr(connection, "notices", None)
    if not notices:
        return
    warned = any(UNREPLICATED in notice for notice in notices)
    del notices[:]
    if warned:
        raise UnreplicatedCommitError("a commit was cancelled while it waited for the synchronous "
                                 "standby: it may be lost at a failover")


def longer_by(config_key: str) -> Any:
    """Mark a view whose requests may wait for the database the setting `config_key` seconds
    longer: the agent's tool calls, which have a statement limit of their own
    (EGIS_AGENT_QUERY_SECONDS)."""
    def mark(view: Any) -> Any:
        view.deadline_longer_by = config_key
        return view
    return mark


def request_seconds(config: Any, view: Any) -> float:
    """How long a request of `view` may wait for the database, in all."""
    seconds = float(config.get("REQUEST_DEADLINE_SECONDS", DEFAULT_SECONDS))
    longer_by = getattr(view, "deadline_longer_by", None)
    return seconds + (float(config[longer_by]) if longer_by else 0.0)


@contextlib.contextmanager
def primary_or_unavailable(connection: Any) -> Iterator[None]:
    """A server that refuses writes (a demoted leader, a standby that HAProxy or a multi-host
    URL reached in a failover's first seconds) is unavailable (503), not a bug (500); its
    connection is closed, so that the pool's next one goes through the write address again."""
    try:
        yield
    except InternalError as error:
        if getattr(getattr(error, "orig", None), "pgcode", None) != READ_ONLY:
            raise
        with contextlib.suppress(Exception):
            connection.close()
        raise NoLongerPrimaryError("the database server no longer takes writes") from error


def seconds_left() -> float | None:
    """What is left of this request's deadline, None outside a request (or without one)."""
    from flask import g, has_request_context

    if not has_request_context() or "database_due" not in g:
        return None
    return g.database_due - monotonic()
