"""The bounded queue and the background thread that empties it, exactly once.

Exactly once: a request whose answer never came (network error), or that egis could not take
now (429, honouring Retry-After; 5xx), is sent again, after an exponential backoff with jitter,
as the same request: the same batch id, `orderId` and `Idempotency-Key`, so egis stores it once
however many copies reach it. Any other 4xx is final: it is logged with egis's sentence and
dropped, and what follows is sent. A 403 naming `restrictedTypes` (a plan gate) drops those
events only; the rest of the batch goes again under a new batch id (egis remembers only stored
batch ids), as the tracker does.

Lifecycle: the thread starts with the first call (so a preloading server's master, which
imports the app but sends nothing, starts none); every live sender is flushed at interpreter
exit (a multiprocessing child's exit too, which skips atexit); in a forked child a sender starts
afresh with an empty queue: what was queued before the fork is the parent's to send, and
sending it from the child too would send it twice.
"""
from __future__ import annotations

import atexit
import logging
import multiprocessing.util
import os
import random
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from egis_client import payloads, transport

log = logging.getLogger("egis_client")

BATCH_EVENTS = 50  # egis takes 1 to 50 events per batch
MAX_BATCH_BYTES = 512 * 1024  # well under egis's 1 MiB body limit
FIRST_BACKOFF = 0.2  # seconds; doubled on each retry
MAX_BACKOFF = 30.0
EXIT_TIMEOUT = 10.0  # how long interpreter exit waits for what is still queued


@dataclass
class Item:
    """One call, queued: a track() event (with `group`) or a whole request."""

    seq: int
    path: str
    key: str
    body: str  # JSON text: the request's body, or one event of a batch
    what: str  # for the log
    idempotency_key: str | None = None
    group: tuple[str, str] | None = None  # (session id, anonymous id): events batched together
    event_type: str | None = None


@dataclass
class Delivery:
    """One request on its way: built once, sent until egis has answered it."""

    path: str
    key: str
    what: str
    items: list[Item]
    body: Callable[[], str]  # the body of the next attempt
    headers: dict[str, str] = field(default_factory=dict)


def backoff(attempt: int) -> float:
    """Seconds before retry number `attempt` (0 first): exponential, with equal jitter so that
    many clients cut off together do not come back together."""
    ceiling = min(MAX_BACKOFF, FIRST_BACKOFF * 2 ** attempt)
    return ceiling / 2 + random.uniform(0, ceiling / 2)


class Sender:
    def __init__(self, host: str, timeout: float, max_queue: int, flush_interval: float,
                 compress: bool) -> None:
        self.host = host.rstrip("/")
        self.timeout = timeout
        self.max_queue = max_queue
        self.flush_interval = flush_interval
        self.compress = compress
        self._closed = False
        self._start_afresh()
        _LIVE.add(self)
        multiprocessing.util.register_after_fork(self, Sender._flush_at_child_exit)

    @staticmethod
    def _flush_at_child_exit(sender: Sender) -> None:
        """In a multiprocessing child: it ends with os._exit(), which skips atexit, after
        running multiprocessing's finalizers (registered here, once its child has cleared the
        parent's)."""
        multiprocessing.util.Finalize(sender, sender.shutdown, args=(EXIT_TIMEOUT,),
                                      exitpriority=10)

    def _start_afresh(self) -> None:
        """New locks, an empty queue, no thread: at creation, and in a forked child (whose
        copies of the parent's locks may be held by a thread that does not exist there)."""
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._queue: deque[Item] = deque()
        self._unsettled: set[int] = set()
        self._next_seq = 0
        self._flush_wanted = False
        self._abandon = threading.Event()
        self._thread: threading.Thread | None = None
        self._dropped = 0

    # --- the calling side ---------------------------------------------------------------------

    def put(self, path: str, key: str, body: str, what: str, *,
            idempotency_key: str | None = None, group: tuple[str, str] | None = None,
            event_type: str | None = None) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("this egis Client is shut down")
            if len(self._queue) >= self.max_queue:
                oldest = self._queue.popleft()
                self._dropped += 1
                self._settle_locked([oldest])
                log.warning("egis client queue full (max_queue=%d): dropped the oldest call, "
                            "%s; %d dropped so far", self.max_queue, oldest.what, self._dropped)
            item = Item(self._next_seq, path, key, body, what, idempotency_key, group,
                        event_type)
            self._next_seq += 1
            self._queue.append(item)
            self._unsettled.add(item.seq)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="egis-client-sender",
                                                daemon=True)
                self._thread.start()
            self._changed.notify_all()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything queued before this call was answered (or dropped)."""
        with self._lock:
            if not self._unsettled:
                return True
            target = self._next_seq - 1
            self._flush_wanted = True
            self._changed.notify_all()
            return self._changed.wait_for(
                lambda: not self._unsettled or min(self._unsettled) > target, timeout)

    def shutdown(self, timeout: float | None = None) -> None:
        flushed = self.flush(timeout)
        with self._lock:
            self._closed = True
            if not flushed:
                self._abandon.set()
            self._changed.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(self.timeout + 1)  # a request in flight may take its whole timeout
        with self._lock:
            lost = len(self._unsettled)
        if lost:
            log.error("egis client shut down with %d call(s) not delivered: they are lost", lost)

    # --- the sending thread -------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._lock:
                self._changed.wait_for(lambda: self._queue or self._closed)
                if not self._queue:
                    return
                self._changed.wait_for(
                    lambda: (self._closed or self._flush_wanted
                             or len(self._queue) >= BATCH_EVENTS),
                    self.flush_interval)
            while not self._abandon.is_set():
                with self._lock:
                    delivery = self._next_delivery_locked()
                    if delivery is None:
                        self._flush_wanted = False
                        break
                try:
                    self._deliver(delivery)
                except Exception:  # a bug here must not stop every later call
                    log.exception("egis client: %s failed unexpectedly; dropped", delivery.what)
                    self._settle(delivery.items)
            if self._abandon.is_set():
                return

    def _next_delivery_locked(self) -> Delivery | None:
        if not self._queue:
            return None
        head = self._queue.popleft()
        if head.group is None:
            headers = {"Idempotency-Key": head.idempotency_key} if head.idempotency_key else {}
            return Delivery(head.path, head.key, head.what, [head], lambda: head.body, headers)
        events, rest, size = [head], deque(), len(head.body)
        for item in self._queue:
            fits = (len(events) < BATCH_EVENTS and size + len(item.body) <= MAX_BATCH_BYTES)
            if fits and item.group == head.group:
                events.append(item)
                size += len(item.body)
            else:
                rest.append(item)
        self._queue = rest
        batch_id = uuid.uuid4().hex  # kept by every retry of this batch
        session_id, anonymous_id = head.group

        def body() -> str:  # sent now: egis corrects event times by this (clock skew)
            return payloads.batch(batch_id, session_id, anonymous_id, int(time.time() * 1000),
                                  [item.body for item in events])

        return Delivery(head.path, head.key, f"batch {batch_id} of {len(events)} event(s)",
                        events, body)

    def _deliver(self, delivery: Delivery) -> None:
        attempt = 0
        while True:
            try:
                answer = transport.exchange("POST", self.host + delivery.path, delivery.key,
                                            self.timeout, delivery.body(), self.compress,
                                            delivery.headers)
            except transport.NetworkError as error:
                answer, reason = None, str(error)
            else:
                if not answer.retryable:
                    if answer.status >= 300:
                        self._refused(delivery, answer)
                    else:
                        self._settle(delivery.items)
                    return
                reason = f"HTTP {answer.status}: {answer.sentence}"
            delay = backoff(attempt)
            if answer is not None and answer.retry_after is not None:
                delay = answer.retry_after + random.uniform(0, 0.25)
            attempt += 1
            log.warning("egis client: %s not delivered (%s); retry %d in %.1f s",
                        delivery.what, reason, attempt, delay)
            if self._abandon.wait(delay):
                return

    def _refused(self, delivery: Delivery, answer: transport.Answer) -> None:
        restricted = answer.body.get("restrictedTypes")
        if answer.status != 403 or not isinstance(restricted, list) \
                or delivery.items[0].group is None:
            log.error("egis refused %s (HTTP %d): %s Dropped.", delivery.what, answer.status,
                      answer.sentence)
            self._settle(delivery.items)
            return
        kept = [item for item in delivery.items if item.event_type not in restricted]
        log.error("egis refused %s (HTTP %d): %s Dropped its %s event(s); %d sent again.",
                  delivery.what, answer.status, answer.sentence, ", ".join(restricted),
                  len(kept))
        with self._lock:
            self._settle_locked([item for item in delivery.items if item not in kept])
            self._queue.extendleft(reversed(kept))  # sent next, under a new batch id

    def _settle(self, items: list[Item]) -> None:
        with self._lock:
            self._settle_locked(items)

    def _settle_locked(self, items: list[Item]) -> None:
        self._unsettled.difference_update(item.seq for item in items)
        self._changed.notify_all()


_LIVE: weakref.WeakSet[Sender] = weakref.WeakSet()


def _forget_the_parents_work() -> None:
    for sender in list(_LIVE):
        sender._start_afresh()


def _flush_at_exit() -> None:
    for sender in list(_LIVE):
        if not sender._closed:
            sender.shutdown(EXIT_TIMEOUT)


os.register_at_fork(after_in_child=_forget_the_parents_work)
atexit.register(_flush_at_exit)
