"""Payload builders and database probes shared by the tracking-ingest tests."""
import gzip
import http.client
import itertools
import time
from typing import Any
from urllib.parse import urlsplit

import orjson
from flask import Flask

from app.ingest.privacy import EMAIL_IN_ID
from app.tracking import store
from app.tracking.quota import period_of, shard
from app.web.bodies import NUMBER_TOO_LARGE
from app.web.schema import BEFORE_ITS_BATCH, MAX_EPOCH_MS, TOO_LONG_AGO
from models import Batch, Event, IngestTally, Usage
from models.site import utcnow
from tests import helpers as shared
from tests.helpers import JSON, db

CHROME_UA = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
             "Chrome/124.0.0.0 Safari/537.36")
GOOGLEBOT_UA = ("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)")
HEADLESS_UA = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
               "HeadlessChrome/124.0.0.0 Safari/537.36")

_ids = itertools.count(1)


def now_ms() -> int:
    return int(time.time() * 1000)


def unique(prefix: str = "b") -> str:
    return f"{prefix}-{next(_ids)}-{time.monotonic_ns()}"


def event(type_: str = "pageview", **fields: Any) -> dict[str, Any]:
    """One valid event; `fields` override or add keys (a value of ... removes the key)."""
    built = {"type": type_, "timestamp": fields.pop("timestamp", now_ms()),
             "pageUrl": "https://std.example/", **fields}
    return {k: v for k, v in built.items() if v is not ...}


def batch(events: list[dict[str, Any]] | int = 1, **fields: Any) -> dict[str, Any]:
    """A valid batch of `events` (a list, or how many pageviews); `fields` override keys."""
    if isinstance(events, int):
        events = [event() for _ in range(events)]
    built = {"id": unique("batch"), "sessionId": "sess-1", "anonymousId": "anon-1",
             "timestamp": now_ms(), "events": events, **fields}
    return {k: v for k, v in built.items() if v is not ...}


def goal(**fields: Any) -> dict[str, Any]:
    built = {"goal_name": "signup", **fields}
    return {k: v for k, v in built.items() if v is not ...}


def dumps(value: Any) -> bytes:
    return orjson.dumps(value)


def gzipped(value: Any) -> bytes:
    return gzip.compress(value if isinstance(value, bytes) else dumps(value))


def post_json(client, path: str, body: Any, headers: dict[str, str] | None = None,
              content_type: str = JSON, encoding: str | None = None):
    """POST a body: a dict/list (serialized with orjson, which refuses NaN and lone surrogates
    where json.dumps would write them) or raw bytes/str, as given; `encoding` names the
    Content-Encoding of a body compressed beforehand."""
    data = body if isinstance(body, (bytes, str)) else dumps(body)
    all_headers = {**(headers or {}), **({"Content-Encoding": encoding} if encoding else {})}
    return shared.post_json(client, path, data, all_headers, content_type)


def stored_counts(app: Flask) -> dict[str, int]:
    """How many events, batches and counted usage exist (all sites)."""
    with db(app):
        return {"events": Event.select().count(), "batches": Batch.select().count(),
                "usage": sum(u.events for u in Usage.select())}


NOTHING = {"events": 0, "batches": 0, "usage": 0}


def stored_events(app: Flask, site_id: int | None = None) -> list[Event]:
    with db(app):
        query = Event.select().order_by(Event.id)
        if site_id is not None:
            query = query.where(Event.site_id == site_id)
        return list(query)


def tallies(app: Flask, site_id: int | None = None) -> dict[str, int]:
    """Today's tally per reason (summed over days, which is today in a test)."""
    with db(app):
        query = IngestTally.select()
        if site_id is not None:
            query = query.where(IngestTally.site_id == site_id)
        totals: dict[str, int] = {}
        for row in query:
            totals[row.reason] = totals.get(row.reason, 0) + row.count
        return totals


def wait_for_tallies(app: Flask, expected: dict[str, int], site_id: int | None = None,
                     timeout: float = 15) -> dict[str, int]:
    """The tallies, once they are `expected` or `timeout` seconds have passed: a live server's
    workers write theirs every TALLY_FLUSH_SECONDS (app.runtime.tally)."""
    deadline = time.monotonic() + timeout
    while (found := tallies(app, site_id)) != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    return found


def seed_usage(app: Flask, site_id: int, events: int, shard: int = 15) -> None:
    """Pretend the site already stored `events` this month (for quota tests)."""
    from app.tracking.quota import period_of
    from models.site import utcnow

    with db(app):
        Usage.create(site_id=site_id, period=period_of(utcnow()), shard=shard, events=events)


def assert_json_error(response, status: int, contains: str | None = None) -> dict[str, Any]:
    """A JSON error with that status whose `error` contains `contains`; returns the body."""
    body = shared.assert_json_error(response, status)
    if contains is not None:
        assert contains in body["error"], body["error"]
    return body


# --- a corpus of bad bodies, shared by the bad-input and the validation-path tests ----------

BODY_ERROR_PREFIX = "The request body is not valid JSON: "
PLACEHOLDER = "PLACEHOLDER"
FIXED_MS = 1_780_000_000_000


def _splice(body: dict[str, Any], raw: bytes) -> bytes:
    """`body` as JSON text with the string "PLACEHOLDER" replaced by raw JSON text."""
    text = dumps(body)
    assert text.count(f'"{PLACEHOLDER}"'.encode()) == 1
    return text.replace(f'"{PLACEHOLDER}"'.encode(), raw)


def fixed_batch(events: list[dict[str, Any]] | int = 1, **fields: Any) -> dict[str, Any]:
    """A valid batch with fixed ids and times (corpus entries must be reproducible)."""
    if isinstance(events, int):
        events = [fixed_event() for _ in range(events)]
    built = {"id": "corpus-batch", "sessionId": "sess-1", "anonymousId": "anon-1",
             "timestamp": FIXED_MS, "events": events, **fields}
    return {k: v for k, v in built.items() if v is not ...}


def fixed_event(type_: str = "pageview", **fields: Any) -> dict[str, Any]:
    built = {"type": type_, "timestamp": FIXED_MS - 1000, "pageUrl": "https://std.example/",
             **fields}
    return {k: v for k, v in built.items() if v is not ...}


def deep(depth: int, leaf: bytes = b"1") -> bytes:
    return b'{"a":' * depth + leaf + b"}" * depth


def deep_value(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


# Bodies that are wrong whatever the endpoint: (id, body, status, exact error or prefix + "…").
COMMON_BAD_BODIES = [
    ("invalid-json", b'{"id": ', 400, BODY_ERROR_PREFIX + "…"),
    ("empty-body", b"", 400, BODY_ERROR_PREFIX + "…"),
    ("trailing-garbage", b'{"a": 1} x', 400, BODY_ERROR_PREFIX + "…"),
    ("two-objects", b"{}{}", 400, BODY_ERROR_PREFIX + "…"),
    ("single-quotes", b"{'a': 1}", 400, BODY_ERROR_PREFIX + "…"),
    ("array", b"[]", 400, "The request body must be a JSON object, not an array."),
    ("string", b'"x"', 400, "The request body must be a JSON object, not a string."),
    ("null", b"null", 400, "The request body must be a JSON object, not null."),
    ("number", b"1", 400, "The request body must be a JSON object, not a number."),
    ("boolean", b"true", 400, "The request body must be a JSON object, not a boolean."),
    ("invalid-utf8", b'{"a": "\xff\xfe"}', 400, BODY_ERROR_PREFIX + "…"),
    ("raw-control-char", b'{"a": "x\x01y"}', 400, BODY_ERROR_PREFIX + "…"),
    ("bom", b"\xef\xbb\xbf{}", 400, BODY_ERROR_PREFIX + "…"),
    ("deep-5000", deep(5000), 400, BODY_ERROR_PREFIX + "…"),
]


def _event_bodies() -> list[tuple[str, bytes, int, str]]:
    b, e = fixed_batch, fixed_event
    types = ("events.0.type: Must be one of: pageview, click, form_submit, scroll, performance, "
             "custom, goal, error, heartbeat.")
    nul = "NUL characters are not allowed."
    number = "Not a valid number (a JSON number is required)."
    boolean = "Not a valid boolean (true or false is required)."
    range_ = "Must be greater than or equal to 0 and less than or equal to 4102444800000."
    too_large = NUMBER_TOO_LARGE
    cases: list[tuple[str, Any, str]] = [
        ("array-of-batch", [b()], "The request body must be a JSON object, not an array."),
        # literals JSON does not have, and numbers a double cannot hold
        ("nan", _splice(b(timestamp=PLACEHOLDER), b"NaN"), BODY_ERROR_PREFIX + "…"),
        ("infinity", _splice(b(timestamp=PLACEHOLDER), b"Infinity"), BODY_ERROR_PREFIX + "…"),
        ("-infinity", _splice(b(timestamp=PLACEHOLDER), b"-Infinity"), BODY_ERROR_PREFIX + "…"),
        ("1e999", _splice(b(timestamp=PLACEHOLDER), b"1e999"), f"timestamp: {too_large}"),
        ("1e400", _splice(b(timestamp=PLACEHOLDER), b"1e400"), f"timestamp: {too_large}"),
        ("-1e999", _splice(b([e(timestamp=PLACEHOLDER)]), b"-1e999"),
         f"events.0.timestamp: {too_large}"),
        ("400-digit-int", _splice(b([e(), e(properties={"n": PLACEHOLDER})]), b"9" * 400),
         f"events.1.properties.n: {too_large}"),
        ("nan-in-properties", _splice(b([e(properties={"v": PLACEHOLDER})]), b"NaN"),
         BODY_ERROR_PREFIX + "…"),
        ("huge-int", _splice(b(timestamp=PLACEHOLDER), b"18446744073709551616"),
         f"timestamp: {range_}"),
        ("lone-surrogate", _splice(b([e(pageUrl=PLACEHOLDER)]), b'"\\ud800"'),
         BODY_ERROR_PREFIX + "…"),
        ("lone-low-surrogate", _splice(b(id=PLACEHOLDER), b'"x\\udc00"'),
         BODY_ERROR_PREFIX + "…"),
        ("surrogate-in-properties-key", _splice(b([e(properties=PLACEHOLDER)]),
                                                b'{"\\ud800": 1}'), BODY_ERROR_PREFIX + "…"),
        ("deep-5000-properties", _splice(b([e(properties=PLACEHOLDER)]), deep(5000)),
         BODY_ERROR_PREFIX + "…"),
        ("deep-300-properties", _splice(b([e(properties=PLACEHOLDER)]), deep(300)),
         "events.0.properties: Nested too deeply: at most 64 levels of objects and arrays."),
        ("deep-300-fingerprint", _splice(b(fingerprint=PLACEHOLDER), deep(300)),
         "fingerprint: Nested too deeply: at most 64 levels of objects and arrays."),
        # NUL characters, wherever they are
        ("nul-pageUrl", b([e(pageUrl="https://std.example/\x00")]), f"events.0.pageUrl: {nul}"),
        ("nul-id", b(id="a\x00"), f"id: {nul}"),
        ("nul-name", b([e(name="\x00")]), f"events.0.name: {nul}"),
        ("nul-nested-property", b([e(), e(properties={"a": {"b": ["ok", "x\x00y"]}})]),
         f"events.1.properties: {nul}"),
        ("nul-property-key", b([e(properties={"k\x00": 1})]), f"events.0.properties: {nul}"),
        ("nul-fingerprint", b(fingerprint={"x": "\x00"}), f"fingerprint: {nul}"),
        ("nul-userId", b(userId="\x00"), f"userId: {nul}"),
        # wrong types
        ("id-number", b(id=1), "id: Not a valid string."),
        ("id-bool", b(id=True), "id: Not a valid string."),
        ("sessionId-null", b(sessionId=None), "sessionId: Field may not be null."),
        ("anonymousId-array", b(anonymousId=[]), "anonymousId: Not a valid string."),
        ("userId-number", b(userId=7), "userId: Not a valid string."),
        ("timestamp-string", b(timestamp="123"), f"timestamp: {number}"),
        ("timestamp-true", b(timestamp=True), f"timestamp: {number}"),
        ("timestamp-false", b(timestamp=False), f"timestamp: {number}"),
        ("timestamp-null", b(timestamp=None), "timestamp: Field may not be null."),
        ("timestamp-object", b(timestamp={}), f"timestamp: {number}"),
        ("timestamp-negative", b(timestamp=-1), f"timestamp: {range_}"),
        ("compressed-number", b(compressed=1), f"compressed: {boolean}"),
        ("compressed-string", b(compressed="true"), f"compressed: {boolean}"),
        ("fingerprint-array", b(fingerprint=[]), "fingerprint: Not a valid mapping type."),
        ("events-object", b(events={}), "events: Not a valid list."),
        ("events-string", b(events="x"), "events: Not a valid list."),
        ("events-null", b(events=None), "events: Field may not be null."),
        ("event-number", b([1]), "events.0._schema: Invalid input type."),
        ("event-array", b([e(), []]), "events.1._schema: Invalid input type."),
        ("type-number", b([e(1)]), "events.0.type: Not a valid string."),
        ("type-null", b([e(None)]), "events.0.type: Field may not be null."),
        ("event-timestamp-string", b([e(timestamp="1")]), f"events.0.timestamp: {number}"),
        ("event-timestamp-true", b([e(timestamp=True)]), f"events.0.timestamp: {number}"),
        ("pageUrl-number", b([e(pageUrl=1)]), "events.0.pageUrl: Not a valid string."),
        ("pageUrl-null", b([e(pageUrl=None)]), "events.0.pageUrl: Field may not be null."),
        ("pageTitle-number", b([e(pageTitle=1)]), "events.0.pageTitle: Not a valid string."),
        ("referrer-false", b([e(referrer=False)]), "events.0.referrer: Not a valid string."),
        ("name-array", b([e(name=[])]), "events.0.name: Not a valid string."),
        ("properties-array", b([e(properties=[])]), "events.0.properties: Not a valid mapping "
                                                    "type."),
        ("properties-string", b([e(properties="x")]), "events.0.properties: Not a valid mapping "
                                                      "type."),
        # missing fields
        ("missing-id", b(id=...), "id: Missing data for required field."),
        ("missing-events", b(events=...), "events: Missing data for required field."),
        ("missing-timestamp", b(timestamp=...), "timestamp: Missing data for required field."),
        ("missing-type", b([e(type=...)]),
         "events.0.type: Missing data for required field."),
        ("missing-pageUrl", b([e(pageUrl=...)]), "events.0.pageUrl: Missing data for required "
                                                 "field."),
        ("empty-object", {}, "id: Missing data for required field.…"),
        # bounds
        ("51-events", b(51), "events: Length must be between 1 and 50."),
        ("0-events", b(0), "events: Length must be between 1 and 50."),
        ("id-129", b(id="i" * 129), "id: Length must be between 1 and 128."),
        ("type-65", b([e("t" * 65)]), types),
        ("type-unknown", b([e("purchase")]), types),
        ("name-129", b([e(name="n" * 129)]), "events.0.name: Longer than maximum length 128."),
        ("pageUrl-2049", b([e(pageUrl="u" * 2049)]),
         "events.0.pageUrl: Length must be between 1 and 2048."),
        ("properties-17k", b([e(properties={"p": "x" * 17_000})]),
         "events.0.properties: Too large: at most 16384 bytes as JSON, got 17008."),
        ("properties-many-keys", b([e(properties={f"k{i}": i for i in range(2000)})]),
         "events.0.properties: Too large: at most 16384 bytes as JSON, got 23781."),
        ("fingerprint-17k", b(fingerprint={"p": "x" * 17_000}),
         "fingerprint: Too large: at most 16384 bytes as JSON, got 17008."),
        ("userId-email", b(userId="Ann.Smith@example.co.uk"), f"userId: {EMAIL_IN_ID}"),
        ("userId-angle-brackets", b(userId="<alice@example.com>"), f"userId: {EMAIL_IN_ID}"),
        ("userId-percent-40", b(userId="alice%40example.com"), f"userId: {EMAIL_IN_ID}"),
        ("userId-fullwidth-at", b(userId="alice\uff20example.com"), f"userId: {EMAIL_IN_ID}"),
        ("anonymousId-small-at", b(anonymousId="alice\ufe6bexample.com"),
         f"anonymousId: {EMAIL_IN_ID}"),
        ("anonymousId-at", b(anonymousId="a@b"), f"anonymousId: {EMAIL_IN_ID}"),
        ("event-at-0-in-a-batch-of-2100", b([e(timestamp=MAX_EPOCH_MS), e(timestamp=0)],
                                            timestamp=MAX_EPOCH_MS),
         f"events.1.timestamp: {BEFORE_ITS_BATCH}"),
        ("event-401-days-before-its-batch", b([e(timestamp=FIXED_MS - 401 * 86_400_000)]),
         f"events.0.timestamp: {BEFORE_ITS_BATCH}"),
        ("event-3-bad", b([e(), e(), e(), e("nope")]), types.replace("events.0", "events.3")),
    ]
    return [(name, body if isinstance(body, bytes) else dumps(body), 400, error)
            for name, body, error in cases]


def _goal_bodies() -> list[tuple[str, bytes, int, str]]:
    nul = "NUL characters are not allowed."
    cases: list[tuple[str, Any, str]] = [
        ("array-of-goal", [goal()], "The request body must be a JSON object, not an array."),
        ("nan-in-metadata", _splice(goal(metadata={"v": PLACEHOLDER}), b"NaN"),
         BODY_ERROR_PREFIX + "…"),
        ("infinity-in-metadata", _splice(goal(metadata={"v": PLACEHOLDER}), b"Infinity"),
         BODY_ERROR_PREFIX + "…"),
        ("1e999-in-metadata", _splice(goal(metadata={"v": PLACEHOLDER}), b"1e999"),
         f"metadata.v: {NUMBER_TOO_LARGE}"),
        ("lone-surrogate", _splice(goal(goal_name=PLACEHOLDER), b'"\\ud800"'),
         BODY_ERROR_PREFIX + "…"),
        ("deep-5000-metadata", _splice(goal(metadata=PLACEHOLDER), deep(5000)),
         BODY_ERROR_PREFIX + "…"),
        ("deep-300-metadata", _splice(goal(metadata=PLACEHOLDER), deep(300)),
         "metadata: Nested too deeply: at most 64 levels of objects and arrays."),
        ("nul-goal_name", goal(goal_name="a\x00"), f"goal_name: {nul}"),
        ("nul-page_url", goal(page_url="\x00"), f"page_url: {nul}"),
        ("nul-metadata", goal(metadata={"a": [{"b": "\x00"}]}), f"metadata: {nul}"),
        ("goal_name-number", goal(goal_name=1), "goal_name: Not a valid string."),
        ("goal_name-true", goal(goal_name=True), "goal_name: Not a valid string."),
        ("goal_name-null", goal(goal_name=None), "goal_name: Field may not be null."),
        ("missing-goal_name", goal(goal_name=...), "goal_name: Missing data for required field."),
        ("goal_name-65", goal(goal_name="g" * 65), "goal_name: Length must be between 1 and 64."),
        ("goal_name-empty", goal(goal_name=""), "goal_name: Length must be between 1 and 64."),
        ("metadata-array", goal(metadata=[]), "metadata: Not a valid mapping type."),
        ("metadata-17k", goal(metadata={"p": "x" * 17_000}),
         "metadata: Too large: at most 16384 bytes as JSON, got 17008."),
        ("anonymous_id-129", goal(anonymous_id="a" * 129),
         "anonymous_id: Longer than maximum length 128."),
        ("anonymous_id-percent-40", goal(anonymous_id="alice%40example.com"),
         f"anonymous_id: {EMAIL_IN_ID}"),
        ("client_timestamp-epoch-0", goal(client_timestamp="0"),
         f"client_timestamp: {TOO_LONG_AGO}"),
        ("client_timestamp-2020", goal(client_timestamp="2020-01-01T00:00:00Z"),
         f"client_timestamp: {TOO_LONG_AGO}"),
        ("session_id-number", goal(session_id=5), "session_id: Not a valid string."),
        ("client_timestamp-number", goal(client_timestamp=1714564800000),
         "client_timestamp: Not a valid string."),
        ("client_timestamp-65", goal(client_timestamp="1" * 65),
         "client_timestamp: Longer than maximum length 64."),
        ("page_url-2049", goal(page_url="u" * 2049), "page_url: Longer than maximum length 2048."),
    ]
    return [(name, body if isinstance(body, bytes) else dumps(body), 400, error)
            for name, body, error in cases]


EVENT_BAD_BODIES = COMMON_BAD_BODIES + _event_bodies()
GOAL_BAD_BODIES = COMMON_BAD_BODIES + _goal_bodies()


def error_matches(actual: str, expected: str) -> bool:
    """`expected` is exact, or a prefix when it ends with an ellipsis."""
    if expected.endswith("…"):
        return actual.startswith(expected[:-1])
    return actual == expected


def post_live(url: str, body: bytes, headers: dict[str, str], path: str = "/api/events",
              timeout: float = 30) -> tuple[int, http.client.HTTPMessage, Any]:
    """POST JSON to a live server: status, headers (names in any case: granian sends them in
    lower case) and the decoded body."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        connection.request("POST", path, body=body,
                           headers={"Content-Type": "application/json", **headers})
        response = connection.getresponse()
        return response.status, response.headers, orjson.loads(response.read())
    finally:
        connection.close()


def store_rows(site_id: int, key: str, events: int = 2, type_: str | None = "pageview"
               ) -> store.BatchRows:
    """What a request hands to app.tracking.store: `events` page views (of `type_`) under the
    batch id `key`."""
    now = utcnow()
    return store.BatchRows(
        site_id=site_id, batch_key=key, session_id="s", anonymous_id="a", user_id=None,
        sent_ts=1, received_at=now, weight=1.0, period=period_of(now), shard=shard(),
        events=[{"type": type_, "name": None, "page_url": "u", "page_title": None,
                 "referrer": None, "properties": {"i": i}, "client_ts": 1, "occurred_at": now}
                for i in range(events)])
