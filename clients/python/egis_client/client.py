"""`Client`: what a backend calls (clients/python/README.md).

Every call but `validate` checks its arguments, queues and returns at once; the sender
(egis_client.sender) delivers in the background, exactly once.
"""
from __future__ import annotations

import time
import uuid
from datetime import datetime
from decimal import Decimal
from typing import Any

from egis_client import payloads, transport
from egis_client.sender import Sender


def _now_ms() -> int:
    return int(time.time() * 1000)


class Client:
    """A client of one egis site. Thread-safe; one per process is enough (a forked worker's
    copy starts its own sender); flushed at interpreter exit."""

    def __init__(self, host: str, *, write_key: str | None = None,
                 server_key: str | None = None, timeout: float = 5.0, max_queue: int = 10000,
                 flush_interval: float = 1.0, gzip: bool = True) -> None:
        if not isinstance(host, str) or not host.startswith(("http://", "https://")):
            raise ValueError(f"host must be an http:// or https:// URL; got {host!r}")
        if write_key is None and server_key is None:
            raise ValueError("give a write_key, a server_key, or both")
        if max_queue < 1 or timeout <= 0 or flush_interval < 0:
            raise ValueError("max_queue must be >= 1, timeout > 0 and flush_interval >= 0")
        self.host = host.rstrip("/")
        self._write_key = write_key
        self._server_key = server_key
        self._timeout = timeout
        self._sender = Sender(self.host, timeout, max_queue, flush_interval, gzip)

    def _key(self, kind: str, call: str) -> str:
        key = self._write_key if kind == "write" else self._server_key
        if key is None:
            raise ValueError(f"{call}() needs the site's {kind} key: Client({kind}_key=...)")
        return key

    def track(self, type: str, *, page_url: str, name: str | None = None,
              properties: dict[str, Any] | None = None, anonymous_id: str, session_id: str,
              page_title: str | None = None, referrer: str | None = None,
              timestamp: datetime | int | None = None) -> None:
        """Queue one event for /api/events; events of one session are batched (up to 50)."""
        key = self._key("write", "track")
        group = (payloads.text(session_id, "session_id", minimum=1, maximum=payloads.MAX_ID),
                 payloads.text(anonymous_id, "anonymous_id", minimum=1,
                               maximum=payloads.MAX_ID))
        body = payloads.event(type, page_url=page_url, name=name, properties=properties,
                              page_title=page_title, referrer=referrer,
                              timestamp_ms=payloads.epoch_ms(timestamp, _now_ms()))
        self._sender.put("/api/events", key, body, f"{type} event", group=group,
                         event_type=type)

    def goal(self, name: str, *, metadata: dict[str, Any] | None = None,
             anonymous_id: str | None = None, session_id: str | None = None,
             page_url: str | None = None) -> None:
        """Queue a conversion goal for /api/goals (write key)."""
        key = self._key("write", "goal")
        body = payloads.goal(name, metadata=metadata, anonymous_id=anonymous_id,
                             session_id=session_id, page_url=page_url, timestamp_ms=_now_ms())
        self._sender.put("/api/goals", key, body, f"goal {name!r}",
                         idempotency_key=str(uuid.uuid4()))

    def revenue(self, event_name: str, *, amount: Decimal | str | int | None = None,
                revenue_cents: int | None = None, currency: str | None = None,
                order_id: str | None = None, user_id: str | None = None,
                anonymous_id: str | None = None, session_id: str | None = None,
                properties: dict[str, Any] | None = None,
                timestamp: datetime | int | None = None) -> None:
        """Queue a trusted server event for /api/server/events (server key). `amount` is major
        units as a Decimal, str or int (a float raises TypeError); `revenue_cents` an int."""
        key = self._key("server", "revenue")
        body = payloads.revenue(
            event_name, amount=amount, revenue_cents=revenue_cents, currency=currency,
            order_id=order_id, user_id=user_id, anonymous_id=anonymous_id,
            session_id=session_id, properties=properties,
            timestamp_ms=payloads.epoch_ms(timestamp, _now_ms()))
        self._sender.put("/api/server/events", key, body, f"server event {event_name!r}",
                         idempotency_key=str(uuid.uuid4()))

    def crawl(self, *, path: str, host: str | None, user_agent: str, ip: str | None,
              sec_fetch_dest: str = "", sec_fetch_mode: str = "") -> None:
        """Queue a crawler sighting for /api/crawl/report (server key)."""
        key = self._key("server", "crawl")
        body = payloads.crawl(path=path, host=host, user_agent=user_agent, ip=ip,
                              sec_fetch_dest=sec_fetch_dest, sec_fetch_mode=sec_fetch_mode)
        self._sender.put("/api/crawl/report", key, body, "crawl report",
                         idempotency_key=str(uuid.uuid4()))

    def validate(self) -> dict[str, Any]:
        """The service's answer to GET /api/validate for the write key (else the server key),
        now; raises egis_client.transport.NetworkError when egis does not answer."""
        key = self._write_key or self._server_key or ""  # the constructor requires one
        answer = transport.exchange("GET", f"{self.host}/api/validate", key, self._timeout)
        return answer.body

    def flush(self, timeout: float | None = None) -> bool:
        """Send what is queued now; True once everything queued before this call was answered
        (False when `timeout` seconds passed first)."""
        return self._sender.flush(timeout)

    def shutdown(self, timeout: float | None = None) -> None:
        """Flush (up to `timeout`), then stop the sender; later calls raise RuntimeError.
        Also done at interpreter exit (waiting at most egis_client.sender.EXIT_TIMEOUT)."""
        self._sender.shutdown(timeout)
