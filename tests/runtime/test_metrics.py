"""/metrics: the exact Prometheus content type, the series, and sums that are right across two
workers of the deployed server; the multiprocess directory is gone when it exits."""
import json
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.fixtures.metrics import samples, value
from tests.fixtures.tracking import batch, dumps, event, goal, post_live

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


def test_content_type_is_exactly_prometheus_text(client):
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == PROMETHEUS_TEXT
    assert response.headers.getlist("Content-Type") == [PROMETHEUS_TEXT]


def test_series_follow_the_traffic_in_one_process(client, std_site):
    before = samples(client.get("/metrics").get_data(as_text=True))
    body = batch([event("pageview"), event("click"), event("click")])
    for _ in range(2):
        client.post("/api/events", json=body, headers=std_site.write_headers())
    client.post("/api/events", json={"id": 1}, headers=std_site.write_headers())
    after = samples(client.get("/metrics").get_data(as_text=True))

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("egis_events_stored_total", type="click") == 2
    assert grew("egis_events_stored_total", type="pageview") == 1
    assert grew("egis_duplicates_total", kind="batch") == 1
    assert grew("egis_rejected_requests_total", reason="rejected_400") == 1
    assert grew("egis_http_requests_total", endpoint="events.post_events", status="200") == 2
    assert grew("egis_http_requests_total", endpoint="events.post_events", status="400") == 1
    assert grew("egis_http_request_seconds_count", endpoint="events.post_events") == 3


def ingest_pids(server) -> set[int]:
    """The workers whose JSON request lines show a POST /api/events."""
    lines = [json.loads(line) for line in server.log().splitlines() if line.startswith("{")]
    return {line["pid"] for line in lines if line.get("endpoint") == "events.post_events"}


def _send(server_url: str, body: bytes, headers: dict[str, str], path: str) -> int:
    return post_live(server_url, body, headers, path=path, timeout=20)[0]


@pytest.mark.slow
def test_two_workers_add_up_and_the_directory_goes_with_the_server(
        start_server, make_site, tmp_path: Path):
    std = make_site("std.example", "standard")
    full = make_site("full.example", "standard", monthly_quota=0)  # every session sampled
    temp = tmp_path / "tmp"
    temp.mkdir()
    server = start_server(workers=2, deploy_config=True, env={
        "TMPDIR": str(temp), "EGIS_SAMPLE_RATE": "0", "GUNICORN_THREADS": "2"})
    [metrics_dir] = temp.glob("egis-metrics-*")

    resent = dumps(batch([event("pageview"), event("click")]))
    requests = (
        [(dumps(batch([event("pageview"), event("click")])), std.write_headers(), "/api/events")
         for _ in range(20)]
        + [(resent, std.write_headers(), "/api/events")] * 4  # stored once, 3 duplicates
        + [(b'{"id": "x"}', std.write_headers(), "/api/events")] * 3  # 400
        + [(dumps(batch(3)), {}, "/api/events")] * 2  # 401: no key
        + [(dumps(batch(3)), full.write_headers(), "/api/events")
           for _ in range(2)]  # 6 events sampled
        + [(dumps(goal()), std.write_headers(), "/api/goals")] * 5
        + [(b'{"eventName": "paid", "orderId": "o-1"}', std.server_headers(),
            "/api/server/events")] * 2  # stored once, 1 duplicate order
    )
    with ThreadPoolExecutor(6) as pool:
        statuses = list(pool.map(lambda r: _send(server.url, *r), requests))
        assert statuses.count(401) == 2 and statuses.count(400) == 3, statuses
        # More until both workers have answered some (which one accepts is the kernel's call).
        extra = 0
        while len(ingest_pids(server)) < 2 and extra < 400:
            good = [(dumps(batch([event("pageview"), event("click")])), std.write_headers(),
                     "/api/events") for _ in range(8)]
            assert set(pool.map(lambda r: _send(server.url, *r), good)) == {200}
            extra += len(good)
    assert len(ingest_pids(server)) == 2, "the sums below must span two processes"

    with urllib.request.urlopen(f"{server.url}/metrics", timeout=10) as response:
        assert response.headers["Content-Type"] == PROMETHEUS_TEXT
        scrape = samples(response.read().decode())
    events = "events.post_events"
    assert value(scrape, "egis_http_requests_total", endpoint=events, status="200") == 26 + extra
    assert value(scrape, "egis_http_requests_total", endpoint=events, status="400") == 3
    assert value(scrape, "egis_http_requests_total", endpoint=events, status="401") == 2
    assert value(scrape, "egis_http_requests_total", endpoint="goals.post_goal",
                 status="200") == 5
    assert value(scrape, "egis_http_request_seconds_count", endpoint=events) == 31 + extra
    assert value(scrape, "egis_events_stored_total", type="pageview") == 21 + extra
    assert value(scrape, "egis_events_stored_total", type="click") == 21 + extra
    assert value(scrape, "egis_events_stored_total", type="goal") == 5
    assert value(scrape, "egis_events_sampled_total") == 6
    assert value(scrape, "egis_duplicates_total", kind="batch") == 3
    assert value(scrape, "egis_duplicates_total", kind="order") == 1
    assert value(scrape, "egis_server_events_stored_total") == 1
    assert value(scrape, "egis_rejected_requests_total", reason="rejected_400") == 3


    server.process.terminate()  # by PID: a graceful shutdown, then the directory goes
    assert server.process.wait(timeout=20) == 0, server.log()
    assert not metrics_dir.exists()
    assert list(temp.iterdir()) == []
