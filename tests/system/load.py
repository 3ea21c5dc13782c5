"""A steady ingest load through a live server: a thread posts 2-event batches and resends each
one that is not answered 200 (same batch id, so stored once) until it is; every answer kept
(status, time taken, when). Used by the cluster's tests and bench.maintenance.cluster."""
import http.client
import itertools
import threading
import time
from dataclasses import dataclass, field

import orjson

from tests.conftest import SiteKeys
from tests.system.cluster import wait_until
from tests.tracking.helpers import batch


@dataclass
class Answer:
    batch_id: str
    status: int
    seconds: float
    at: float  # monotonic, when answered
    duplicate: bool = False


@dataclass
class Load:
    """A thread posting 2-event batches through the live server, resending each until a 200."""
    url: str
    site: SiteKeys
    prefix: str
    timeout: float = 60  # the client's, per request: longer than any answer may take
    answers: list[Answer] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def start(self) -> "Load":
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        wait_until(lambda: self.ok_after(0), 30, "the load's first 200")
        return self

    def post(self, body: dict) -> Answer:
        host, port = self.url.removeprefix("http://").split(":")
        started = time.monotonic()
        connection = http.client.HTTPConnection(host, int(port), timeout=self.timeout)
        try:
            connection.request("POST", "/api/events", body=orjson.dumps(body),
                               headers={"Content-Type": "application/json",
                                        **self.site.write_headers()})
            response = connection.getresponse()
            status, text = response.status, response.read()
        except OSError:
            status, text = 0, b"{}"
        finally:
            connection.close()
        duplicate = status == 200 and bool(orjson.loads(text).get("duplicate"))
        return Answer(body["id"], status, time.monotonic() - started, time.monotonic(),
                      duplicate)

    def send_until_stored(self, body: dict) -> Answer:
        while True:
            answer = self.post(body)
            self.answers.append(answer)
            if answer.status == 200:
                return answer
            time.sleep(0.1)

    def _run(self) -> None:
        number = 0
        while not self.stopping.is_set():
            number += 1
            body = batch(2, id=f"{self.prefix}-{number}")
            self.sent.append(body["id"])
            self.send_until_stored(body)
            time.sleep(0.01)

    def ok_after(self, moment: float) -> bool:
        return any(a.status == 200 and a.at > moment for a in self.answers)

    def stop(self) -> None:
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(timeout=self.timeout + 30)
            assert not self.thread.is_alive(), "the load did not end"

    def longest_outage(self) -> float:
        """The longest time between two 200 answers."""
        oks = [a.at for a in self.answers if a.status == 200]
        return max((b - a for a, b in itertools.pairwise(oks)), default=0.0)
