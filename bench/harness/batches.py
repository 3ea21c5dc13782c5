"""The batches the ingest benchmarks send: page views as the tracker sends them, written ahead
for wrk (whose Lua has no gzip) to send gzip-compressed."""
import gzip
import json
import uuid


def batch_body(batch_id: str, run: str, number: int, per_batch: int, compressed: bool,
               one_page: bool = False, sessions: int = 100) -> bytes:
    """A batch of `per_batch` page views as bench/harness/ingest.lua sends it, gzip-compressed
    as the tracker sends it when `compressed`; with `one_page`, as the tracker's batches mostly
    are: a page view and what followed it on that page (scroll, click, heartbeat). The batches
    of a run belong to `sessions` visits in turn."""
    events = [{"type": "pageview", "timestamp": 1763700000000,
               "pageUrl": f"https://bench.example/page/{i + 1}" + (
                   "?utm_source=newsletter&utm_medium=email&utm_campaign=spring" if i == 0
                   else ""),
               "pageTitle": f"Page {i + 1}", "referrer": "https://www.google.com/",
               "properties": {"utm_source": "news", "i": i + 1}}
              for i in range(per_batch)]
    if one_page:
        followers = ("scroll", "click", "heartbeat")
        events[1:] = [{"type": followers[i % len(followers)], "timestamp": 1763700000000 + i,
                       "pageUrl": events[0]["pageUrl"], "properties": {"i": i}}
                      for i in range(1, per_batch)]
    body = json.dumps({"id": batch_id, "sessionId": f"s-{run}-{number % sessions}",
                       "anonymousId": f"a-{run}", "timestamp": 1763700001000,
                       "compressed": compressed, "fingerprint": {"screenWidth": 1280},
                       "events": events}).encode()
    return gzip.compress(body, compresslevel=6) if compressed else body


def write_gzip_bodies(directory: str, count: int, per_batch: int, run: str,
                      uuid_ids: bool = False, one_page: bool = False,
                      sessions: int = 100) -> dict[str, str]:
    """`count` gzip-compressed batches with distinct ids, and the env that tells ingest.lua.

    The ids are `run-number`, or random UUIDs as the tracker sends them with `uuid_ids`;
    `one_page` and `sessions`: batch_body's.
    """
    bodies_path, index_path = f"{directory}/bodies", f"{directory}/index"
    offset = 0
    with open(bodies_path, "wb") as bodies, open(index_path, "w") as index:
        for number in range(count):
            batch_id = str(uuid.uuid4()) if uuid_ids else f"{run}-{number}"
            body = batch_body(batch_id, run, number, per_batch, compressed=True,
                              one_page=one_page, sessions=sessions)
            bodies.write(body)
            index.write(f"{offset} {len(body)}\n")
            offset += len(body)
    return {"EGIS_BODIES": bodies_path, "EGIS_BODY_INDEX": index_path}
