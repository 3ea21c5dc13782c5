"""Request bodies (app.web.bodies): gzip within its limits, strict JSON objects, numbers as JSON
has them."""
import gzip
import zlib

import pytest

from app.web.bodies import NUMBER_TOO_LARGE, gunzip, json_object
from app.web.errors import ApiError

# --- bodies ---------------------------------------------------------------------------------

def test_gunzip_limits():
    data = b"x" * 1000
    assert gunzip(gzip.compress(data), 1000) == data
    with pytest.raises(ApiError) as over:
        gunzip(gzip.compress(data), 999)
    assert (over.value.status, over.value.tally_reason) == (413, "rejected_413")
    with pytest.raises(ApiError) as truncated:
        gunzip(gzip.compress(data)[:-4], 1000)
    assert (truncated.value.status, truncated.value.message) == (
        400, "The gzip body is truncated.")
    with pytest.raises(ApiError) as corrupt:
        gunzip(zlib.compress(data), 1000)  # zlib, not gzip, framing
    assert corrupt.value.status == 400
    assert gunzip(gzip.compress(b""), 0) == b""


@pytest.mark.parametrize(("body", "message"), [
    (b"[1]", "The request body must be a JSON object, not an array."),
    (b"1.5", "The request body must be a JSON object, not a number."),
    (b'{"a": NaN}', None), (b'{"a": 1e400}', f"a: {NUMBER_TOO_LARGE}"), (b'"\\udfff"', None),
])
def test_json_object_is_strict(body, message):
    with pytest.raises(ApiError) as error:
        json_object(body)
    assert error.value.status == 400
    if message:
        assert error.value.message == message
    else:
        assert error.value.message.startswith("The request body is not valid JSON: ")


def test_json_object_keeps_numbers_as_json_has_them():
    assert json_object(b'{"a": 1, "b": 1.5, "c": 18446744073709551615}') == {
        "a": 1, "b": 1.5, "c": 18446744073709551615}

