"""JSON-RPC 2.0 pieces of the MCP endpoint (app.agent.jsonrpc): the error envelope, which ids
are valid, and ids echoed as the client wrote them."""
import orjson
import pytest
from mcp_types import METHOD_NOT_FOUND

from app.agent.jsonrpc import RpcError, error_response, ids_as_written, method_not_found, valid_id


def test_an_error_carries_its_data_only_when_there_is_some():
    assert error_response(7, RpcError(-32602, "Bad params")) == {
        "jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": "Bad params"}}
    assert RpcError(-32602, "Bad", {"field": "x"}).payload() == {
        "code": -32602, "message": "Bad", "data": {"field": "x"}}


@pytest.mark.parametrize("value", ["a", "", 0, -3, 1.5, orjson.Fragment(b"1e400")])
def test_a_string_or_a_number_is_a_valid_id(value):
    assert valid_id(value)


@pytest.mark.parametrize("value", [None, True, False, [1], {"id": 1}])
def test_null_booleans_and_containers_are_no_ids(value):
    assert not valid_id(value)


def test_an_id_a_double_cannot_hold_is_echoed_as_written():
    body = b'[{"jsonrpc": "2.0", "id": 0.1000000000000000000001, "method": "ping"},' \
           b' {"jsonrpc": "2.0", "id": 2, "method": "ping"}]'
    messages = ids_as_written(body, orjson.loads(body))
    assert orjson.dumps([message["id"] for message in messages]) == b"[0.1000000000000000000001,2]"


def test_ids_that_are_no_doubles_are_left_alone():
    message = {"jsonrpc": "2.0", "id": "x", "method": "ping"}
    assert ids_as_written(orjson.dumps(message), message) is message


def test_method_not_found_names_the_method_in_json_quotes():
    error = method_not_found(" ", "2025-06-18")
    assert error.code == METHOD_NOT_FOUND
    assert error.message == 'Method not found: " " (protocol 2025-06-18)'
    assert method_not_found("tools/lsit").message == 'Method not found: "tools/lsit"'
