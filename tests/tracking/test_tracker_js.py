"""GET /tracker.js: the committed build of sdk/, with an exact type, an ETag and a 304."""
from pathlib import Path

import pytest

from tests.fixtures import ROOT
from tests.fixtures.helpers import assert_json_error

BUILT = ROOT / "sdk" / "dist" / "tracker.js"


def test_serves_the_built_tracker(client):
    response = client.get("/tracker.js")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/javascript"
    assert response.data == BUILT.read_bytes()
    assert response.headers["Cache-Control"] == "public, max-age=3600"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Cross-Origin-Resource-Policy"] == "cross-origin"
    etag, weak = response.get_etag()
    assert etag and not weak
    assert "Set-Cookie" not in response.headers


def test_a_matching_if_none_match_gets_304_without_the_body(client):
    etag = client.get("/tracker.js").headers["ETag"]
    response = client.get("/tracker.js", headers={"If-None-Match": etag})
    assert response.status_code == 304
    assert response.data == b""
    assert response.headers["ETag"] == etag
    assert response.headers["Cache-Control"] == "public, max-age=3600"
    assert client.get("/tracker.js", headers={"If-None-Match": '"other"'}).status_code == 200
    assert client.get("/tracker.js", headers={"If-None-Match": "*"}).status_code == 304


def test_the_etag_follows_the_bytes(make_app, tmp_path: Path):
    built = tmp_path / "tracker.js"
    built.write_bytes(b"(()=>{})();\n")
    first = make_app(TRACKER_PATH=str(built)).test_client().get("/tracker.js")
    built.write_bytes(b"(()=>{window.egis={}})();\n")
    second = make_app(TRACKER_PATH=str(built)).test_client().get("/tracker.js")
    assert first.data == b"(()=>{})();\n" and second.data.startswith(b"(()=>{window")
    assert first.headers["ETag"] != second.headers["ETag"]


def test_head_answers_the_headers_alone(client):
    response = client.head("/tracker.js")
    assert response.status_code == 200
    assert response.data == b""
    assert response.headers["Content-Length"] == str(BUILT.stat().st_size)


@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_other_methods_get_a_json_405(client, method):
    assert_json_error(getattr(client, method)("/tracker.js"), 405)


def test_an_unbuilt_tracker_is_a_json_404(make_app, tmp_path: Path):
    client = make_app(TRACKER_PATH=str(tmp_path / "missing.js")).test_client()
    body = assert_json_error(client.get("/tracker.js"), 404)
    assert "npm run build" in body["error"]


def test_served_without_a_database(make_app):
    client = make_app(DATABASE_URL="postgresql://postgres@127.0.0.1:9/nowhere").test_client()
    assert client.get("/tracker.js").status_code == 200
