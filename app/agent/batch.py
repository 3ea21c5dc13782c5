"""JSON-RPC batches on /api/mcp (revisions 2024-11-05 and 2025-03-26 only): what one POST may
hold and what each of its members costs, so that a batch costs what as many POSTs would.

- A batch holds at most MAX_MEMBERS messages; a larger one is refused whole (400, -32600),
  nothing run.
- Every member counts against the MCP rate limit (EGIS_RATE_LIMIT_MCP, per key or OAuth grant):
  the POST's own count (blueprints/mcp.py) is its first member's, and each member after it is
  counted as its turn comes (`admit`). The first member over the limit, and every member after
  it, is answered RATE_LIMITED without running; the members before it have run. A notification
  or a client's response over the limit is dropped (it is owed no answer).
- The members share one call's time limit (EGIS_AGENT_QUERY_SECONDS): a tool call starts with
  what the members before it left (app.agent.catalogue), so a POST holds its worker thread
  about as long as one call may, whatever it holds: without the shared limit, a POST of
  many `query` calls held its thread for about a minute, and a few such POSTs kept ingest waiting
  (tests/agent/test_batch.py).
- The members share one of the worker's slots for tool calls (app.agent.capacity), the one the
  first call to find it free took.
"""
from collections.abc import Callable
from contextvars import ContextVar
from time import monotonic
from typing import Any

from mcp_types import INVALID_REQUEST

from app.agent import capacity
from app.agent.jsonrpc import RpcError, error_response, valid_id

MAX_MEMBERS = 100
RATE_LIMITED = -32029  # in JSON-RPC's range for server errors; 29 as in HTTP's 429
TOO_LARGE = ("Invalid request: a batch holds at most {most} messages; this one has {count:,}. "
             "Send them in several POSTs.")
RATE_LIMIT_EXCEEDED = ("Rate limit exceeded ({limit}): this message was not run; retry after "
                       "{seconds} s.")

Admit = Callable[[], RpcError | None]  # counts one more member: None, or why it may not run
Answer = Callable[[Any], dict[str, Any] | None]  # one member's reply; None: owed no answer

# When the batch being answered began and when its current member began (monotonic seconds).
_clock: ContextVar[list[float] | None] = ContextVar("batch_clock", default=None)


def rate_limited(limit: str, retry_after: int) -> RpcError:
    """The answer to a member over the rate limit `limit` ("300 per 1 minute"), whose window
    resets in `retry_after` seconds (also in `data`, for a client that retries)."""
    return RpcError(RATE_LIMITED, RATE_LIMIT_EXCEEDED.format(limit=limit, seconds=retry_after),
                    {"retryAfter": retry_after})


def too_large(count: int) -> RpcError | None:
    """Why a batch of `count` messages is refused whole, or None."""
    return (RpcError(INVALID_REQUEST, TOO_LARGE.format(most=MAX_MEMBERS, count=count))
            if count > MAX_MEMBERS else None)


def answer_members(messages: list[Any], answer: Answer, admit: Admit | None) -> list[Any]:
    """The replies to a batch's members, in order, each run once `admit` lets it (the first is
    already counted); from the first it refuses on, none runs. Its tool calls run in one slot."""
    replies = []
    refused: RpcError | None = None
    clock = [monotonic()] * 2
    token = _clock.set(clock)
    try:
        with capacity.one_slot():
            for index, message in enumerate(messages):
                if index and refused is None and admit is not None:
                    refused = admit()
                clock[1] = monotonic() if index else clock[0]
                reply = answer(message) if refused is None else _refusal(message, refused)
                if reply is not None:
                    replies.append(reply)
    finally:
        _clock.reset(token)
    return replies


def _refusal(message: Any, error: RpcError) -> dict[str, Any] | None:
    if isinstance(message, dict) and "id" not in message:
        return None  # a notification, or a response from the client
    request_id = message.get("id") if isinstance(message, dict) else None
    return error_response(request_id if valid_id(request_id) else None, error)


def seconds_spent() -> float | None:
    """The seconds the members before the current one took, in the batch being answered (0.0
    for its first member); None outside a batch."""
    clock = _clock.get()
    return None if clock is None else clock[1] - clock[0]
