"""The attacks that stalled egis through client metadata documents, replayed on a live server as
deployed (deploy/gunicorn.conf.py: 4 threads a worker), with what ingest answers meanwhile
(app/oauth/fetches.py, app/oauth/documents.py):
- eight clients at once naming hosts whose servers send their headers a byte a second: no fetch
  lasts past the 3 s deadline, at most two run at once per worker, the others are answered at
  once with a page saying to try again, and POST /api/events answers 200 all along;
- hosts that accept and never answer, or never accept: a third fetch at once is refused at once
  (while the first two are held), a failed host is not contacted again for a minute (the
  connections its listener saw are counted), and after a minute (a test clock) it is.
"""
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest

from app.oauth import documents
from tests.fixtures.helpers import wait_for
from tests.fixtures.oauth import (
    LOOPBACK_HOSTS,
    Clock,
    DocumentServer,
    Pkce,
    StallingServer,
    in_process,
)
from tests.fixtures.servers import IN_REQUEST, LiveServer
from tests.fixtures.tracking import batch

pytestmark = pytest.mark.slow

CALLBACK = "http://127.0.0.1:1/callback"
REFUSAL = documents.REFUSAL


def authorization(client_id: str) -> dict[str, str]:
    return {"response_type": "code", "client_id": client_id, "redirect_uri": CALLBACK,
            "code_challenge": Pkce.new().challenge, "code_challenge_method": "S256",
            "state": "s"}


@pytest.fixture
def serve(start_server: Callable[..., LiveServer], certificates) -> Callable[[int], LiveServer]:
    """egis as deployed with `workers` workers, trusting the test CA, allowing documents on
    loopback addresses, and a per-address OAuth limit out of the attack's way."""
    def start(workers: int) -> LiveServer:
        return start_server(workers, deploy_config=True, env={
            "EGIS_OAUTH_PRIVATE_CLIENT_URLS": "1", "SSL_CERT_FILE": str(certificates.ca),
            "EGIS_RATE_LIMIT_OAUTH": "100000/minute", **IN_REQUEST})
    return start


class Attack:
    """`clients` threads asking /oauth/authorize over and over, each time for a client_id on
    the next host of `urls`; one told to try again (503) asks for the same host again shortly,
    as a client would. `answers` holds every answer's status and page."""

    def __init__(self, base: str, urls: Iterator[str], clients: int) -> None:
        self.base, self.urls, self.clients = base, urls, clients
        self.answers: list[tuple[int, str, str | None]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(clients)]

    def __enter__(self) -> "Attack":
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_exc: Any) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)

    def _run(self) -> None:
        with httpx2.Client(base_url=self.base, timeout=120) as http:
            url = None
            while not self._stop.is_set():
                with self._lock:
                    url = url or next(self.urls, None)
                if url is None:
                    return
                answer = http.get("/oauth/authorize", params=authorization(url))
                self.answers.append((answer.status_code, answer.text,
                                     answer.headers.get("Retry-After")))
                if answer.status_code == 503:
                    time.sleep(0.2)  # and the same host again
                else:
                    url = None


def ingest(http: httpx2.Client, write_key: str, stalling: StallingServer | None = None
           ) -> tuple[int, float, int]:
    """POST /api/events: the status, the seconds it took, and how many connections `stalling`
    held open when it was answered."""
    started = time.perf_counter()
    answer = http.post("/api/events", json=batch(1), headers={"X-API-Key": write_key})
    return (answer.status_code, time.perf_counter() - started,
            stalling.open_now() if stalling else 0)


def test_headers_trickled_a_byte_a_second_hold_no_worker_and_ingest_goes_on(
        serve, certificates, document_server: DocumentServer, make_site):
    egis = serve(2)
    keys = make_site("std.example", "standard")
    http = httpx2.Client(base_url=egis.url, timeout=20)
    fine = document_server.serve_client("/fine.json", [CALLBACK], "Fine client")
    assert http.get("/oauth/authorize", params=authorization(fine)).status_code == 200
    before = [ingest(http, keys.write_key) for _ in range(10)]
    assert {status for status, _, _ in before} == {200}

    trickle = StallingServer("trickle", LOOPBACK_HOSTS, certificates)
    try:
        with Attack(egis.url, (trickle.url(host) for host in LOOPBACK_HOSTS), 8) as attack:
            wait_for(lambda: trickle.open_now() >= 2, what="the attack to hold fetches")
            during = []  # ingest all along, until the attack has held two rounds of fetches
            while len(trickle.held) < 8 and len(during) < 1000:
                during.append(ingest(http, keys.write_key, trickle))
                time.sleep(0.02)
        held = list(trickle.held)
    finally:
        trickle.stop()
        http.close()

    # Ingest answered all along (before the change, the eight stalled requests held all eight
    # threads and ingest waited for them), many of its answers while two fetches or more
    # were held.
    assert len(held) >= 8 and {status for status, _, _ in during} == {200}
    assert sum(open_then >= 2 for _, _, open_then in during) >= 3
    # No fetch outlived the deadline: each cut about 3 bytes in, of headers that would have
    # taken a minute; never more than two at once in each of the two workers.
    assert held and all(each.cut and each.sent < 10 < len(trickle.trickled) for each in held)
    assert trickle.most_open <= 2 * 2
    # The fetched were refused with the one sentence, the others told to try again.
    statuses = {status for status, _, _ in attack.answers}
    assert statuses == {400, 503}, statuses
    assert all(REFUSAL in page for status, page, _ in attack.answers if status == 400)
    assert all(documents.BUSY in page and retry == str(documents.BUSY_RETRY_SECONDS)
               for status, page, retry in attack.answers if status == 503)
    before_ms = statistics.median(seconds * 1000 for _, seconds, _ in before)
    during_ms = [seconds * 1000 for _, seconds, _ in during]
    print(f"\ningest before the attack: median {before_ms:.1f} ms; during it: median "
          f"{statistics.median(during_ms):.1f} ms, max {max(during_ms):.1f} ms; {len(held)} "
          f"fetches, at most {trickle.most_open} at once, each cut after at most "
          f"{max(each.sent for each in held)} bytes; {len(during)} ingest requests, "
          f"{sum(open_then >= 2 for _, _, open_then in during)} answered while two fetches or "
          f"more were held; {len(attack.answers)} attack answers")


def test_a_third_fetch_is_refused_at_once_and_a_failed_host_is_not_contacted_again(
        serve, document_server: DocumentServer, make_site):
    egis = serve(1)  # one worker, its 4 threads
    keys = make_site("std.example", "standard")
    silent = StallingServer("silent", LOOPBACK_HOSTS[:2])  # accept, never answer
    unaccepting = StallingServer("unaccepting", LOOPBACK_HOSTS[2:3])
    first, second, third = (silent.url(LOOPBACK_HOSTS[0]), silent.url(LOOPBACK_HOSTS[1]),
                            unaccepting.url(LOOPBACK_HOSTS[2]))
    answers: dict[str, httpx2.Response] = {}

    def ask(url: str) -> None:
        with httpx2.Client(base_url=egis.url, timeout=20) as each:
            answers[url] = each.get("/oauth/authorize", params=authorization(url))

    http = httpx2.Client(base_url=egis.url, timeout=20)
    try:
        fine = document_server.serve_client("/fine.json", [CALLBACK], "Fine client")
        assert http.get("/oauth/authorize", params=authorization(fine)).status_code == 200
        held = [threading.Thread(target=ask, args=(url,)) for url in (first, second)]
        for thread in held:
            thread.start()
        wait_for(lambda: silent.open_now() == 2, what="two fetches held")
        busy = http.get("/oauth/authorize", params=authorization(third))
        stored = ingest(http, keys.write_key)
        # Both answered while the two fetches were still held: at once.
        assert silent.open_now() == 2
        assert busy.status_code == 503 and busy.headers["Retry-After"] == "2"
        assert documents.BUSY in busy.text and busy.headers["Content-Type"].startswith("text/html")
        assert stored[0] == 200
        for thread in held:
            thread.join(timeout=20)
        assert [(answers[url].status_code, REFUSAL in answers[url].text)
                for url in (first, second)] == [(400, True)] * 2
        assert unaccepting.seen() == 0  # the third was never fetched

        # A failed host is answered from memory, whatever the path: nobody connects.
        for url in (first, silent.url(LOOPBACK_HOSTS[0], "/other.json"), second):
            again = http.get("/oauth/authorize", params=authorization(url))
            assert again.status_code == 400 and REFUSAL in again.text
        assert silent.seen() == 2
        # The third host now has a slot: fetched once, then remembered too.
        for _ in range(2):
            refused = http.get("/oauth/authorize", params=authorization(third))
            assert refused.status_code == 400 and REFUSAL in refused.text
        assert unaccepting.seen() == 1
    finally:
        http.close()
        silent.stop()
        unaccepting.stop()


def test_a_failure_is_remembered_a_minute(trusted, make_app, make_site, monkeypatch,
                                          document_server: DocumentServer):
    clock = Clock(monkeypatch)
    app = make_app(OAUTH_PRIVATE_CLIENT_URLS=True)
    make_site("std.example", "standard")
    silent = StallingServer("silent", LOOPBACK_HOSTS[3:4])
    try:
        with in_process(app) as make:
            me = make(CALLBACK)

            def refused(url: str) -> bool:
                me.client_id = url
                page = me.http.get("/oauth/authorize", params=me.authorization())
                return page.status_code == 400 and REFUSAL in page.text

            assert refused(silent.url(LOOPBACK_HOSTS[3]))  # 3 s, then remembered
            assert silent.seen() == 1
            clock.advance(seconds=59)
            assert refused(silent.url(LOOPBACK_HOSTS[3], "/other.json"))
            assert silent.seen() == 1
            clock.advance(seconds=2)
            assert refused(silent.url(LOOPBACK_HOSTS[3]))
            assert silent.seen() == 2  # tried again after a minute

            # A document refused for what it is: that URL is remembered, not its host.
            good = document_server.serve_client("/good.json", [CALLBACK], "Good")
            broken = document_server.url("/missing.json")
            for _ in range(2):
                assert refused(broken)
            assert document_server.hits["/missing.json"] == 1
            me.client_id = good
            assert me.http.get("/oauth/authorize", params=me.authorization()).status_code == 200
            clock.advance(seconds=61)
            assert refused(broken) and document_server.hits["/missing.json"] == 2
    finally:
        silent.stop()


def test_past_two_fetches_the_token_endpoint_says_try_again_and_revocation_fetches_nothing(
        trusted, make_app, make_site):
    app = make_app(OAUTH_PRIVATE_CLIENT_URLS=True)
    make_site("std.example", "standard")
    silent = StallingServer("silent", LOOPBACK_HOSTS[4:7])
    first, second, third = (silent.url(host) for host in LOOPBACK_HOSTS[4:7])
    try:
        with in_process(app) as make:
            holders = [make(CALLBACK) for _ in range(2)]
            held = [threading.Thread(target=holder.http.get, args=("/oauth/authorize",),
                                     kwargs={"params": authorization(url)})
                    for holder, url in zip(holders, (first, second), strict=True)]
            for thread in held:
                thread.start()
            wait_for(lambda: silent.open_now() == 2, what="two fetches held")
            me = make(CALLBACK)
            me.client_id = third
            busy = me.exchange("no-such-code")
            revoked = me.http.post("/oauth/revoke", data={"token": "x", "client_id": third})
            assert silent.open_now() == 2  # both answered while the two were held
            assert (busy.status_code, busy.headers["Retry-After"], busy.json()) == (
                503, "2", {"error": "temporarily_unavailable",
                           "error_description": documents.BUSY})
            assert (revoked.status_code, revoked.json()) == (200, {})
            for thread in held:
                thread.join(timeout=20)
            assert me.exchange("no-such-code").json()["error"] == "invalid_client"  # fetched
    finally:
        silent.stop()
    assert silent.seen() == 3
