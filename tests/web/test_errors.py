"""Every status the app can return leaves as JSON `{"error": "..."}`: never HTML, no traceback."""
import pytest
from flask import Blueprint, request
from marshmallow import Schema, ValidationError, fields, validate
from playhouse.pool import MaxConnectionsExceeded

from app.web.errors import MESSAGES, format_validation_messages
from models import IngestTally, database
from models.ingest_tally import REJECTED_429
from tests.fixtures.servers import free_port


class ProbeSchema(Schema):
    name = fields.String(required=True, validate=validate.Length(max=5))
    count = fields.Integer()


def add_probe_routes(app) -> None:
    """Test-only routes: body readers and a route that fails, on this app instance only."""
    bp = Blueprint("error_probe", __name__)

    @bp.post("/_probe/raw")
    def raw():
        return {"bytes": len(request.get_data())}

    @bp.post("/_probe/json")
    def json_body():
        return ProbeSchema().load(request.get_json())

    @bp.get("/_probe/boom")
    def boom():
        raise RuntimeError("secret internals: password=hunter2")

    @bp.get("/_probe/pool-exhausted")
    def pool_exhausted():
        raise MaxConnectionsExceeded("Max connections exceeded, timed out attempting to connect.")

    app.register_blueprint(bp)


@pytest.fixture
def probe(make_app):
    app = make_app(MAX_BODY_BYTES=1024)
    add_probe_routes(app)
    return app.test_client()


def assert_json_error(response, status: int, message: str | None = None) -> dict:
    assert response.status_code == status, response.get_data(True)
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert isinstance(body, dict)
    assert isinstance(body["error"], str) and body["error"]
    if message is not None:
        assert body["error"] == message
    text = response.get_data(True)
    assert "<html" not in text.lower() and "Traceback" not in text
    return body


@pytest.mark.parametrize("path", ["/nope", "/api/nope", "/api/validate/extra", "/static/x.css"])
def test_404(client, path):
    assert_json_error(client.get(path), 404, MESSAGES[404])


@pytest.mark.parametrize(("method", "path", "allowed"), [
    ("POST", "/api/validate", {"GET", "HEAD", "OPTIONS"}),
    ("DELETE", "/api/validate", {"GET", "HEAD", "OPTIONS"}),
    ("POST", "/healthz", {"GET", "HEAD", "OPTIONS"}),
    ("PUT", "/readyz", {"GET", "HEAD", "OPTIONS"}),
    ("POST", "/api/openapi.json", {"GET", "HEAD", "OPTIONS"}),
])
def test_405_with_allow(client, method, path, allowed):
    response = client.open(path, method=method)
    assert_json_error(response, 405, MESSAGES[405])
    assert {m.strip() for m in response.headers["Allow"].split(",")} == allowed


def test_413_body_over_max_body_bytes(probe):
    assert probe.post("/_probe/raw", data=b"x" * 1024).get_json() == {"bytes": 1024}
    assert_json_error(probe.post("/_probe/raw", data=b"x" * 1025), 413, MESSAGES[413])


def test_413_default_limit_is_one_mebibyte(make_app):
    app = make_app()
    add_probe_routes(app)
    client = app.test_client()
    assert client.post("/_probe/raw", data=b"x" * 1_048_576).status_code == 200
    assert_json_error(client.post("/_probe/raw", data=b"x" * 1_048_577), 413)


def test_400_invalid_json(probe):
    response = probe.post("/_probe/json", data=b'{"name": ', content_type="application/json")
    assert_json_error(response, 400, MESSAGES[400])


def test_400_marshmallow_validation_names_the_field(probe):
    response = probe.post("/_probe/json", json={"name": "too long", "count": "x"})
    body = assert_json_error(response, 400)
    assert body["error"] == "name: Longer than maximum length 5.; count: Not a valid integer."
    assert body["details"] == {"name": ["Longer than maximum length 5."],
                               "count": ["Not a valid integer."]}
    missing = assert_json_error(probe.post("/_probe/json", json={}), 400)
    assert missing["error"] == "name: Missing data for required field."


def test_415_not_json(probe):
    response = probe.post("/_probe/json", data="name=x", content_type="text/plain")
    assert_json_error(response, 415, MESSAGES[415])


def test_500_is_json_even_with_testing_on(make_app):
    app = make_app()
    assert app.testing
    add_probe_routes(app)
    body = assert_json_error(app.test_client().get("/_probe/boom"), 500, MESSAGES[500])
    assert "hunter2" not in str(body)


def test_500_is_json_without_testing(make_app):
    app = make_app(TESTING=False)
    add_probe_routes(app)
    assert_json_error(app.test_client().get("/_probe/boom"), 500, MESSAGES[500])


def test_401_and_403_are_json(client, std_site):
    assert_json_error(client.get("/api/validate"), 401)
    assert_json_error(client.post("/api/events", json={}, headers=std_site.server_headers()),
                      403)


def test_429_on_validate_with_retry_after(make_app, std_site, monkeypatch):
    monkeypatch.setenv("EGIS_RATE_LIMIT_VALIDATE", "2/minute")  # from_prefixed_env, as deployed
    app = make_app()
    assert app.config["RATE_LIMIT_VALIDATE"] == "2/minute"
    client = app.test_client()
    for _ in range(2):
        assert client.get("/api/validate", headers=std_site.write_headers()).status_code == 200
    response = client.get("/api/validate", headers=std_site.write_headers())
    assert_json_error(response, 429,
                      "Rate limit exceeded (2 per 1 minute); retry after the Retry-After delay.")
    assert 0 < int(response.headers["Retry-After"]) <= 60
    # Counted per client IP, whatever the key: another address still gets through.
    other = client.get("/api/validate", headers=std_site.write_headers(),
                       environ_base={"REMOTE_ADDR": "127.0.0.2"})
    assert other.status_code == 200


def test_429_also_limits_requests_without_a_valid_key(make_app):
    client = make_app(RATE_LIMIT_VALIDATE="2/minute").test_client()
    statuses = [client.get("/api/validate", headers={"X-API-Key": f"egis_bad{i}"}).status_code
                for i in range(3)]
    assert statuses == [401, 401, 429]


def test_429_is_tallied_against_the_site(make_app, std_site):
    """A rate-limited ingest request counts in the site's honest account of refusals."""
    app = make_app(RATE_LIMIT_KEY="1/minute")
    client = app.test_client()
    goal = {"goal_name": "signup"}
    assert client.post("/api/goals", json=goal, headers=std_site.write_headers()).status_code == (
        200)
    response = client.post("/api/goals", json=goal, headers=std_site.write_headers())
    assert_json_error(response, 429)
    assert "Retry-After" in response.headers
    with app.app_context(), database.connection_context():
        tally = {row.reason: row.count for row in IngestTally.select()}
    assert tally.get(REJECTED_429) == 1


def test_503_when_the_database_is_unreachable(make_app):
    app = make_app(DATABASE_URL=f"postgresql://postgres@127.0.0.1:{free_port()}/nowhere")
    client = app.test_client()
    for headers in ({"X-API-Key": "egis_" + "A" * 43}, {}):
        response = client.get("/api/validate", headers=headers)
        assert_json_error(response, 503, MESSAGES[503])
        assert response.headers["Retry-After"] == "5"
    ready = client.get("/readyz")
    assert_json_error(ready, 503)
    assert ready.headers["Retry-After"] == "5"
    assert client.get("/healthz").status_code == 200
    assert client.get("/healthz").get_json() == {"status": "ok"}
    assert client.get("/api/openapi.json").status_code == 200  # needs no database
    goal = client.post("/api/goals", json={"goal_name": "x"}, headers={"X-API-Key": "egis_x"})
    assert_json_error(goal, 503, MESSAGES[503])


def test_503_when_the_sqlite_file_cannot_be_opened(make_app, tmp_path):
    app = make_app(DATABASE_URL=f"sqlite:///{tmp_path}/missing/dir/egis.sqlite3")
    (tmp_path / "missing" / "dir").rmdir()  # make_database created it; now it is gone
    response = app.test_client().get("/api/validate", headers={"X-API-Key": "egis_x"})
    assert_json_error(response, 503, MESSAGES[503])
    assert app.test_client().get("/readyz").status_code == 503


def test_503_when_the_pool_is_exhausted(probe):
    response = probe.get("/_probe/pool-exhausted")
    assert_json_error(response, 503, MESSAGES[503])
    assert response.headers["Retry-After"] == "5"


def test_every_status_of_the_table_has_a_message():
    assert set(MESSAGES) == {400, 401, 403, 404, 405, 413, 415, 429, 500, 503}


def test_format_validation_messages():
    messages = {"events": {3: {"type": ["Must be one of: a."]}}, "id": ["Bad.", "Worse."]}
    assert format_validation_messages(messages) == (
        "events.3.type: Must be one of: a.; id: Bad. Worse.")
    assert format_validation_messages(["Top."]) == "Top."
    with pytest.raises(ValidationError) as error:
        from blueprints.events import BatchSchema

        BatchSchema().load({})
    text = format_validation_messages(error.value.messages)
    for name in ("id", "sessionId", "anonymousId", "timestamp", "events"):
        assert f"{name}: Missing data for required field." in text

