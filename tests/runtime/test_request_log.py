"""One JSON log line per request, with the request id that X-Request-Id returns; never a key,
never an IP."""
import json
import logging
import re

import pytest
from flask import Blueprint

from app.runtime.request_log import JsonFormatter
from tests.fixtures.tracking import batch

HEX_ID = re.compile(r"[0-9a-f]{32}")
CLIENT_IP = "203.0.113.77"


@pytest.fixture
def request_lines(caplog):
    """The request lines logged so far, as the JSON the handler writes."""
    caplog.set_level(logging.INFO, logger="app.request_log")

    def lines() -> list[dict]:
        return [json.loads(JsonFormatter().format(record)) for record in caplog.records
                if record.name == "app.request_log"]

    return lines


@pytest.mark.parametrize(("method", "path", "status"), [
    ("GET", "/healthz", 200), ("GET", "/nope", 404), ("GET", "/api/events", 405),
    ("POST", "/api/events", 401), ("GET", "/metrics", 200),
])
def test_every_answer_carries_a_request_id_and_logs_one_line(client, request_lines, method,
                                                             path, status):
    response = client.open(path, method=method)
    assert response.status_code == status
    request_id = response.headers["X-Request-Id"]
    assert HEX_ID.fullmatch(request_id)
    [line] = request_lines()
    assert line["request_id"] == request_id and line["status"] == status
    assert line["method"] == method and line["msg"] == "request" and line["level"] == "info"


def test_the_line_names_endpoint_route_status_duration_and_site(client, std_site,
                                                                request_lines):
    response = client.post("/api/events", json=batch(), headers=std_site.write_headers())
    assert response.status_code == 200
    [line] = request_lines()
    assert set(line) == {"ts", "level", "logger", "pid", "msg", "request_id", "method", "route",
                         "endpoint", "status", "duration_ms", "site_id"}
    assert (line["route"], line["endpoint"], line["status"], line["site_id"]) == (
        "/api/events", "events.post_events", 200, std_site.site.id)
    assert line["duration_ms"] > 0
    client.get("/nope?secret=1")
    assert (request_lines()[-1]["route"], request_lines()[-1]["site_id"]) == (None, None)


@pytest.mark.parametrize("trusted", [0, 1])
def test_never_a_key_nor_an_ip(make_app, std_site, request_lines, trusted):
    client = make_app(TRUSTED_PROXIES=trusted).test_client()
    forwarded = {"X-Forwarded-For": CLIENT_IP}
    environ = {"REMOTE_ADDR": CLIENT_IP}
    client.post("/api/events", json=batch(), headers=std_site.write_headers(**forwarded),
                environ_base=environ)
    client.post("/api/events", json=batch(), environ_base=environ,
                headers={"Authorization": f"Bearer {std_site.write_key}", **forwarded})
    client.post("/api/server/events", json={"eventName": "x"}, environ_base=environ,
                headers=std_site.server_headers(**forwarded))
    client.post("/api/crawl/report", environ_base=environ, headers=std_site.server_headers(),
                json={"path": "/", "userAgent": "GPTBot/1.0", "ip": CLIENT_IP})
    client.get(f"/api/validate?key={std_site.write_key}", environ_base=environ)
    lines = request_lines()
    assert [line["status"] for line in lines] == [200, 200, 200, 204, 401]
    text = json.dumps(lines)
    for secret in (std_site.write_key, std_site.server_key, CLIENT_IP,
                   std_site.write_key.split("_", 1)[1][:12]):
        assert secret not in text


def test_a_proxys_request_id_is_kept_and_a_strange_one_replaced(client):
    assert client.get("/healthz", headers={"X-Request-Id": "nginx-4f2a9c"}).headers[
        "X-Request-Id"] == "nginx-4f2a9c"
    for strange in ("x" * 65, "has space", "quote\"d", ""):
        answer = client.get("/healthz", headers={"X-Request-Id": strange})
        assert HEX_ID.fullmatch(answer.headers["X-Request-Id"])


def test_other_records_are_json_too_with_the_traceback(make_app, caplog):
    app = make_app()
    probe = Blueprint("log_probe", __name__)

    @probe.get("/_probe/boom")
    def boom():
        raise RuntimeError("boom")

    app.register_blueprint(probe)
    with caplog.at_level(logging.INFO, logger="app"):
        response = app.test_client().get("/_probe/boom")
    assert response.status_code == 500
    [error] = [r for r in caplog.records if r.name == "app.web.errors"]
    line = json.loads(JsonFormatter().format(error))
    assert line["level"] == "error" and line["msg"] == "unhandled error"
    assert "RuntimeError: boom" in line["exc"]
    handlers = logging.getLogger("app").handlers
    assert [h for h in handlers if isinstance(h.formatter, JsonFormatter)]
