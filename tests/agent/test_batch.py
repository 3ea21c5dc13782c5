"""JSON-RPC batches on /api/mcp (app.agent.batch): every member counts against the MCP rate
limit, a body holds at most 100 members, and the members share one call's time limit."""
from typing import Any

import orjson
import pytest

from app.agent.batch import RATE_LIMITED
from app.agent.catalogue import BATCH_SPENT, TIMEOUT

QUERY = {"name": "query", "arguments": {"period": "7d", "metrics": ["visits", "pageviews"]}}


def member(request_id: Any, method: str = "tools/call") -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if method == "tools/call":
        message["params"] = QUERY
    return message


def post(client, keys, body: Any):
    """POST a body in the batching revision 2025-03-26."""
    return client.post("/api/mcp", data=orjson.dumps(body), headers={
        **keys.server_headers(), "Content-Type": "application/json",
        "MCP-Protocol-Version": "2025-03-26"})


def replies_of(response) -> dict[Any, dict[str, Any]]:
    assert response.status_code == 200, response.data[:300]
    return {reply["id"]: reply for reply in response.get_json()}


def answered(replies: dict[Any, dict[str, Any]]) -> list[Any]:
    return [key for key, reply in replies.items()
            if "result" in reply and reply["result"]["isError"] is False]


def rate_limited(replies: dict[Any, dict[str, Any]], limit: str) -> list[Any]:
    """The ids answered RATE_LIMITED, each with its exact message and retryAfter."""
    found = [key for key, reply in replies.items()
             if reply.get("error", {}).get("code") == RATE_LIMITED]
    for key in found:
        error = replies[key]["error"]
        seconds = error["data"]["retryAfter"]
        assert 0 < seconds <= 60
        assert error["message"] == (f"Rate limit exceeded ({limit}): this message was "
                                    f"not run; retry after {seconds} s.")
    return found


def test_every_member_counts_against_the_mcp_limit(make_app, make_site):
    app = make_app(RATE_LIMIT_MCP="50/minute")
    client = app.test_client()
    within, over = make_site("within.example"), make_site("over.example")

    # 50 members in a batch: all run, and they spent the key's 50 requests
    replies = replies_of(post(client, within, [member(n) for n in range(50)]))
    assert answered(replies) == list(range(50))
    assert post(client, within, member(99)).status_code == 429

    # 60 members: the first 50 run, the 10 after them are refused without running
    replies = replies_of(post(client, over, [member(n) for n in range(60)]))
    assert answered(replies) == list(range(50))
    assert rate_limited(replies, "50 per 1 minute") == list(range(50, 60))
    assert post(client, over, member(99)).status_code == 429


def test_members_over_the_limit_that_are_owed_no_answer_get_none(make_app, std_site):
    app = make_app(RATE_LIMIT_MCP="2/minute")
    notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    replies = replies_of(post(app.test_client(), std_site, [
        member(1, "ping"), member(2, "ping"), notification, member(3, "ping"), member(4)]))
    assert list(replies) == [1, 2, 3, 4]
    assert replies[1]["result"] == replies[2]["result"] == {}
    assert rate_limited(replies, "2 per 1 minute") == [3, 4]


def test_a_body_holds_at_most_100_members(make_app, std_site):
    """A 101-member body is refused whole: nothing runs, and only the POST itself counts (the
    limit of 201 a minute then still holds another 100 members)."""
    app = make_app(RATE_LIMIT_MCP="201/minute")
    client = app.test_client()
    assert answered(replies_of(post(client, std_site, [member(n) for n in range(100)]))) \
        == list(range(100))

    response = post(client, std_site, [member(n) for n in range(101)])
    assert response.status_code == 400
    assert response.get_json() == {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600, "message": "Invalid request: a batch holds at most 100 messages; this "
                                   "one has 101. Send them in several POSTs."}}

    assert answered(replies_of(post(client, std_site, [member(n) for n in range(100)]))) \
        == list(range(100))
    assert post(client, std_site, member(1)).status_code == 429


@pytest.mark.parametrize("limit", [20.0, 1e-6])
def test_members_share_one_calls_time_limit(make_app, std_site, limit):
    """With the usual limit, every member runs; with a limit the first member spends, the
    members after it are answered without running."""
    app = make_app(AGENT_QUERY_SECONDS=limit)
    replies = replies_of(post(app.test_client(), std_site, [member(n) for n in range(3)]))
    if limit == 20.0:
        assert answered(replies) == [0, 1, 2]
        return
    first = replies[0]["result"]
    assert first["isError"] is False or first["content"][0]["text"] == TIMEOUT.format(
        seconds=limit)
    for later in (1, 2):
        assert replies[later]["result"]["isError"] is True
        assert replies[later]["result"]["content"] == [{"type": "text", "text": BATCH_SPENT.format(
            seconds=limit, what="not run")}]
