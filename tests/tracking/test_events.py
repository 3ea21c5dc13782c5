"""POST /api/events: what a valid batch stores, every bound at its edge, plan gates, money and
personal data, e-mail addresses in disguise, clock skew and events from another century, bots,
the tally of what was not stored, OpenAPI, one statement."""
from datetime import timedelta

import pytest

from app.ingest.privacy import EMAIL_IN_ID, EMAIL_IN_ID_PATTERN
from app.web.schema import (
    BEFORE_ITS_BATCH,
    MAX_EPOCH_MS,
    MAX_EVENT_AGE_MS,
    MAX_JSON_DEPTH,
    MAX_PROPERTIES_BYTES,
    TOO_LONG_AGO,
)
from models import Batch, Event, database
from models.event import EVENT_TYPES
from tests.fixtures import ROOT
from tests.fixtures.database import BACKEND
from tests.fixtures.helpers import EMAIL_DISGUISES, assert_nowhere_in_the_database
from tests.fixtures.tracking import (
    CHROME_UA,
    GOOGLEBOT_UA,
    HEADLESS_UA,
    NOTHING,
    assert_json_error,
    batch,
    db,
    dumps,
    event,
    now_ms,
    post_json,
    seed_usage,
    stored_counts,
    stored_events,
    tallies,
)

TYPES_MESSAGE = ("Must be one of: pageview, click, form_submit, scroll, performance, custom, "
                 "goal, error, heartbeat.")
RANGE_MESSAGE = "Must be greater than or equal to 0 and less than or equal to 4102444800000."
DAY_MS = 86_400_000


def post(client, site, body, **headers):
    return post_json(client, "/api/events", body, site.write_headers(**headers))


def nested(depth: int) -> dict:
    """A properties object with exactly `depth` levels of objects."""
    value: dict = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def sized_properties(size: int) -> dict:
    """Properties that serialize (orjson, as the limit is measured) to exactly `size` bytes."""
    value = {"p": "x" * (size - len(b'{"p":""}'))}
    assert len(dumps(value)) == size
    return value


# --- the happy path -------------------------------------------------------------------------

def test_a_batch_is_stored_with_every_field(client, app, std_site):
    sent = now_ms()
    body = batch([event("pageview", timestamp=sent - 1500, pageTitle="Home",
                        referrer="https://ref.example/", pageUrl="https://std.example/a?b=1"),
                  event("custom", name="video_play", timestamp=sent - 500,
                        properties={"video": "intro", "n": 3, "ok": True, "x": None})],
                 userId="user-42", sessionId="s-1", anonymousId="a-1", timestamp=sent,
                 compressed=False, fingerprint={"tz": "UTC"})
    response = post(client, std_site, body)
    assert response.status_code == 200
    assert response.get_json() == {"success": True, "count": 2}
    first, second = stored_events(app)
    with db(app):
        stored_batch = Batch.get()
    assert (stored_batch.site_id, stored_batch.batch_key, stored_batch.event_count) == (
        std_site.site.id, body["id"], 2)
    for row in (first, second):
        assert row.site_id == std_site.site.id
        assert row.batch_id == stored_batch.id
        assert (row.session_id, row.anonymous_id, row.user_id) == ("s-1", "a-1", "user-42")
        assert row.sent_ts == sent
        assert row.weight == 1.0
        assert row.client_time_raw is None
        assert row.received_at == stored_batch.received_at
    assert (first.type, first.name, first.page_url, first.page_title, first.referrer) == (
        "pageview", None, "https://std.example/a?b=1", "Home", "https://ref.example/")
    assert first.properties is None
    assert first.client_ts == sent - 1500
    assert (second.type, second.name) == ("custom", "video_play")
    assert second.properties == {"video": "intro", "n": 3, "ok": True, "x": None}
    assert stored_counts(app) == {"events": 2, "batches": 1, "usage": 2}
    assert tallies(app) == {}


def test_bearer_key_and_json_charset_are_accepted(client, app, std_site):
    response = post_json(client, "/api/events", batch(),
                         {"Authorization": f"Bearer {std_site.write_key}"},
                         content_type="application/json; charset=utf-8")
    assert response.status_code == 200, response.get_json()
    assert stored_counts(app)["events"] == 1


def test_unknown_fields_are_ignored_and_not_stored(client, app, std_site):
    body = batch([event(weight=1000, site_id=999, secret="x")], extra={"a": 1}, site_id=999)
    response = post(client, std_site, body)
    assert response.get_json() == {"success": True, "count": 1}
    (row,) = stored_events(app)
    assert (row.site_id, row.weight) == (std_site.site.id, 1.0)


@pytest.mark.parametrize("event_type", EVENT_TYPES)
def test_each_of_the_nine_types_is_accepted(client, app, std_site, event_type):
    response = post(client, std_site, batch([event(event_type)]))
    assert response.get_json() == {"success": True, "count": 1}
    assert [row.type for row in stored_events(app)] == [event_type]


def test_null_optional_fields_are_accepted(client, app, std_site):
    body = batch([event(name=None, pageTitle=None, referrer=None, properties=None)],
                 userId=None, compressed=None, fingerprint=None)
    assert post(client, std_site, body).get_json() == {"success": True, "count": 1}


def test_empty_referrer_and_astral_characters(client, app, std_site):
    name = "😀" * 128  # 128 characters (256 UTF-16 units): at the limit, not over it
    response = post(client, std_site, batch([event(referrer="", name=name)]))
    assert response.get_json() == {"success": True, "count": 1}
    (row,) = stored_events(app)
    assert (row.referrer, row.name) == ("", name)


# --- every bound at n (accepted) and n+1 (400 naming the field, nothing stored) -------------

EDGE_CASES = [
    # (id, batch at the limit, batch over it, the error text)
    ("events-count", lambda: batch(50), lambda: batch(51),
     "events: Length must be between 1 and 50."),
    ("events-empty", lambda: batch(1), lambda: batch([]),
     "events: Length must be between 1 and 50."),
    ("id", lambda: batch(id="i" * 128), lambda: batch(id="i" * 129),
     "id: Length must be between 1 and 128."),
    ("id-empty", lambda: batch(id="i"), lambda: batch(id=""),
     "id: Length must be between 1 and 128."),
    ("sessionId", lambda: batch(sessionId="s" * 128), lambda: batch(sessionId="s" * 129),
     "sessionId: Length must be between 1 and 128."),
    ("anonymousId", lambda: batch(anonymousId="a" * 128), lambda: batch(anonymousId="a" * 129),
     "anonymousId: Length must be between 1 and 128."),
    ("userId", lambda: batch(userId="u" * 128), lambda: batch(userId="u" * 129),
     "userId: Length must be between 1 and 128."),
    ("userId-email", lambda: batch(userId="ann.example.com"),
     lambda: batch(userId="ann@example.com"), f"userId: {EMAIL_IN_ID}"),
    ("anonymousId-email", lambda: batch(anonymousId="ann.example.com"),
     lambda: batch(anonymousId="ann@example.com"), f"anonymousId: {EMAIL_IN_ID}"),
    ("type", lambda: batch([event("heartbeat")]), lambda: batch([event("t" * 64)]),
     f"events.0.type: {TYPES_MESSAGE}"),
    ("type-case", lambda: batch([event("pageview")]), lambda: batch([event("PageView")]),
     f"events.0.type: {TYPES_MESSAGE}"),
    ("name", lambda: batch([event(name="n" * 128)]), lambda: batch([event(name="n" * 129)]),
     "events.0.name: Longer than maximum length 128."),
    ("pageUrl", lambda: batch([event(pageUrl="u" * 2048)]),
     lambda: batch([event(pageUrl="u" * 2049)]),
     "events.0.pageUrl: Length must be between 1 and 2048."),
    ("pageUrl-empty", lambda: batch([event(pageUrl="u")]), lambda: batch([event(pageUrl="")]),
     "events.0.pageUrl: Length must be between 1 and 2048."),
    ("pageTitle", lambda: batch([event(pageTitle="t" * 1024)]),
     lambda: batch([event(pageTitle="t" * 1025)]),
     "events.0.pageTitle: Longer than maximum length 1024."),
    ("referrer", lambda: batch([event(referrer="r" * 2048)]),
     lambda: batch([event(referrer="r" * 2049)]),
     "events.0.referrer: Longer than maximum length 2048."),
    ("properties-size", lambda: batch([event(properties=sized_properties(MAX_PROPERTIES_BYTES))]),
     lambda: batch([event(properties=sized_properties(MAX_PROPERTIES_BYTES + 1))]),
     f"events.0.properties: Too large: at most 16384 bytes as JSON, got "
     f"{MAX_PROPERTIES_BYTES + 1}."),
    ("properties-depth", lambda: batch([event(properties=nested(MAX_JSON_DEPTH))]),
     lambda: batch([event(properties=nested(MAX_JSON_DEPTH + 1))]),
     "events.0.properties: Nested too deeply: at most 64 levels of objects and arrays."),
    ("fingerprint-size", lambda: batch(fingerprint=sized_properties(MAX_PROPERTIES_BYTES)),
     lambda: batch(fingerprint=sized_properties(MAX_PROPERTIES_BYTES + 1)),
     "fingerprint: Too large: at most 16384 bytes as JSON, got 16385."),
    ("timestamp-max", lambda: batch([event(timestamp=MAX_EPOCH_MS)], timestamp=MAX_EPOCH_MS),
     lambda: batch(timestamp=MAX_EPOCH_MS + 1), f"timestamp: {RANGE_MESSAGE}"),
    ("timestamp-min", lambda: batch(timestamp=0), lambda: batch(timestamp=-1),
     f"timestamp: {RANGE_MESSAGE}"),
    ("event-timestamp-max", lambda: batch([event(timestamp=MAX_EPOCH_MS)]),
     lambda: batch([event(timestamp=MAX_EPOCH_MS + 1)]), f"events.0.timestamp: {RANGE_MESSAGE}"),
    ("event-timestamp-min", lambda: batch([event(timestamp=0)], timestamp=0),
     lambda: batch([event(timestamp=-0.5)]), f"events.0.timestamp: {RANGE_MESSAGE}"),
    ("event-400-days-before-its-batch",
     lambda: batch([event(timestamp=1_000_000_000_000)],
                   timestamp=1_000_000_000_000 + MAX_EVENT_AGE_MS),
     lambda: batch([event(timestamp=1_000_000_000_000)],
                   timestamp=1_000_000_000_000 + MAX_EVENT_AGE_MS + 1),
     f"events.0.timestamp: {BEFORE_ITS_BATCH}"),
]


@pytest.mark.parametrize(("at_limit", "over_limit", "message"),
                         [case[1:] for case in EDGE_CASES], ids=[case[0] for case in EDGE_CASES])
def test_bound_at_its_edge(client, app, std_site, at_limit, over_limit, message):
    over = post(client, std_site, over_limit())
    body = assert_json_error(over, 400)
    assert body["error"] == message
    assert stored_counts(app) == NOTHING
    assert tallies(app) == {"rejected_400": 1}

    ok = post(client, std_site, at_limit())
    assert ok.status_code == 200, ok.get_json()
    assert ok.get_json()["count"] == len(at_limit()["events"])


def test_one_bad_event_rejects_the_whole_batch(client, app, std_site):
    events = [event() for _ in range(5)]
    events[3]["type"] = "purchase"
    response = post(client, std_site, batch(events))
    body = assert_json_error(response, 400)
    assert body["error"] == f"events.3.type: {TYPES_MESSAGE}"
    assert body["details"] == {"events": {"3": {"type": [TYPES_MESSAGE]}}}
    assert stored_counts(app) == NOTHING


def test_every_bad_field_is_named(client, app, std_site):
    events = [event(), event(pageUrl=1), event(timestamp="1")]
    response = post(client, std_site, batch(events, sessionId=None, anonymousId=...))
    error = assert_json_error(response, 400)["error"]
    for part in ("sessionId: Field may not be null.",
                 "anonymousId: Missing data for required field.",
                 "events.1.pageUrl: Not a valid string.",
                 "events.2.timestamp: Not a valid number (a JSON number is required)."):
        assert part in error
    assert stored_counts(app) == NOTHING


# --- clock skew -----------------------------------------------------------------------------

def test_event_time_is_corrected_for_client_clock_skew(client, app, std_site):
    # The client clock runs an hour slow: its timestamps are old, the delays are not.
    sent = now_ms() - 3_600_000
    body = batch([event(timestamp=sent - 5000), event(timestamp=sent), event(timestamp=sent + 900)],
                 timestamp=sent)
    assert post(client, std_site, body).get_json()["count"] == 3
    five_before, at_send, after_send = stored_events(app)
    assert five_before.occurred_at == five_before.received_at - timedelta(seconds=5)
    assert at_send.occurred_at == at_send.received_at
    assert after_send.occurred_at == after_send.received_at  # never after arrival
    assert [row.client_ts for row in (five_before, at_send, after_send)] == [
        sent - 5000, sent, sent + 900]
    assert {row.sent_ts for row in (five_before, at_send, after_send)} == {sent}


def test_the_2100_batch_with_an_event_at_0_is_refused_whole(client, app, std_site):
    """A clock in the wrong century: the event would have been stored in 1896."""
    late = MAX_EPOCH_MS - 399 * DAY_MS
    accepted = post(client, std_site, batch([event(timestamp=late)], timestamp=MAX_EPOCH_MS))
    assert accepted.get_json() == {"success": True, "count": 1}
    (row,) = stored_events(app)
    assert row.occurred_at == row.received_at - timedelta(days=399)
    before = stored_counts(app)

    body = batch([event(timestamp=MAX_EPOCH_MS), event(timestamp=0)], timestamp=MAX_EPOCH_MS)
    refused = assert_json_error(post(client, std_site, body), 400)
    assert refused["error"] == f"events.1.timestamp: {BEFORE_ITS_BATCH}"
    assert refused["details"] == {"events": {"1": {"timestamp": [BEFORE_ITS_BATCH]}}}
    assert stored_counts(app) == before
    with db(app):
        assert not Batch.select().where(Batch.batch_key == body["id"]).exists()
    assert tallies(app) == {"rejected_400": 1}


def test_an_event_arrives_at_most_400_days_late(client, app, std_site):
    sent = now_ms()
    for days in (1, 399, 400):
        body = batch([event(timestamp=sent - days * DAY_MS)], timestamp=sent)
        assert post(client, std_site, body).get_json() == {"success": True, "count": 1}
    assert [row.received_at - row.occurred_at for row in stored_events(app)] == [
        timedelta(days=days) for days in (1, 399, 400)]
    before = stored_counts(app)
    for late_ms in (401 * DAY_MS, MAX_EVENT_AGE_MS + 1):
        body = batch([event(timestamp=sent), event(timestamp=sent - late_ms), event()],
                     timestamp=sent)
        refused = post(client, std_site, body)
        assert assert_json_error(refused, 400)["error"] == (
            f"events.1.timestamp: {BEFORE_ITS_BATCH}")
    assert stored_counts(app) == before
    assert tallies(app) == {"rejected_400": 2}


def test_a_batch_from_a_clock_far_ahead_is_stored_at_its_receipt(client, app, std_site):
    """The batch's own offset is what counts: a clock years ahead (or behind) moves the batch
    and its events alike, and an event stamped after its batch is never in the future."""
    ahead = MAX_EPOCH_MS - 10 * DAY_MS
    body = batch([event(timestamp=ahead - 2 * DAY_MS), event(timestamp=ahead + 5 * DAY_MS)],
                 timestamp=ahead)
    assert post(client, std_site, body).get_json() == {"success": True, "count": 2}
    two_days, after_send = stored_events(app)
    assert two_days.occurred_at == two_days.received_at - timedelta(days=2)
    assert after_send.occurred_at == after_send.received_at


def test_fractional_timestamps(client, app, std_site):
    sent = now_ms() + 0.75
    body = batch([event(timestamp=sent - 250.5)], timestamp=sent)
    assert post(client, std_site, body).get_json()["count"] == 1
    (row,) = stored_events(app)
    assert row.occurred_at == row.received_at - timedelta(milliseconds=250.5)
    assert (row.client_ts, row.sent_ts) == (int(sent - 250.5), int(sent))


# --- money and personal data ----------------------------------------------------------------

def test_money_keys_are_stripped_from_properties(client, app, std_site):
    properties = {"Amount": 10, "REVENUE": 5, "revenue_cents": 500, "currency": "EUR",
                  "Currency": "USD", "plan": "pro", "amounts": [1], "currency_code": "EUR"}
    body = batch([event("custom", name="checkout", properties=properties),
                  event("click", properties={"amount": 1})])
    assert post(client, std_site, body).get_json()["count"] == 2
    checkout, click = stored_events(app)
    assert checkout.properties == {"plan": "pro", "amounts": [1], "currency_code": "EUR"}
    assert click.properties == {}


def test_money_keys_are_stripped_at_every_depth(client, app, std_site):
    """At depth 1 and 3, and in objects within a list; their siblings stay."""
    properties = {"cart": {"Amount": 10, "coupon": "X1"},
                  "a": {"b": {"c": {"REVENUE_CENTS": 500, "kept": True}, "d": 1}},
                  "items": [{"sku": "A1", "revenue": 5, "qty": 2}, "note",
                            [{"sku": "B2", "CURRENCY": "EUR"}]]}
    assert post(client, std_site, batch([event("custom", properties=properties)])
                ).get_json()["count"] == 1
    (row,) = stored_events(app)
    assert row.properties == {"cart": {"coupon": "X1"}, "a": {"b": {"c": {"kept": True}, "d": 1}},
                              "items": [{"sku": "A1", "qty": 2}, "note", [{"sku": "B2"}]]}


def test_the_size_bound_is_on_the_properties_as_sent(client, app, std_site):
    """16 KiB with money nested in it is accepted and stripped; one byte more is refused, though
    the money removed would bring it under."""
    def properties(size: int) -> dict:
        rows_ = [{"amount": 12345, "sku": "s" * 30} for _ in range(250)]
        value = {"rows": rows_, "pad": ""}
        value["pad"] = "p" * (size - len(dumps(value)))
        assert len(dumps(value)) == size
        return value

    assert post(client, std_site, batch([event(properties=properties(MAX_PROPERTIES_BYTES))])
                ).get_json()["count"] == 1
    (row,) = stored_events(app)
    assert row.properties["rows"] == [{"sku": "s" * 30}] * 250
    refused = post(client, std_site, batch([event(properties=properties(
        MAX_PROPERTIES_BYTES + 1))]))
    assert assert_json_error(refused, 400)["error"] == (
        f"events.0.properties: Too large: at most 16384 bytes as JSON, got "
        f"{MAX_PROPERTIES_BYTES + 1}.")
    assert stored_counts(app)["events"] == 1


def test_form_submit_fields_lose_personal_data(client, app, std_site):
    listed = {"formName": "signup", "fields": [
        "name", "password", "email", "company", "phone_number", "ann@example.com",
        "4111 1111 1111 1111", "cc-number", "message"]}
    mapped = {"formName": "contact", "fields": {
        "name": "Ann", "userEmail": "x", "note": " ann@example.com ", "plan": "pro",
        "card": "4111111111111111", "amount": 5}, "amount": 10}
    objects = {"fields": [{"name": "city", "value": "Paris"},
                          {"name": "x", "type": "email", "value": "y"},
                          {"name": "csrf", "type": "hidden", "value": "abc"},
                          {"name": "iban", "value": "DE89370400440532013000"}]}
    body = batch([event("form_submit", properties=listed),
                  event("form_submit", properties=mapped),
                  event("form_submit", properties=objects),
                  event("click", properties={"password": "kept: only form fields are vetted"})])
    assert post(client, std_site, body).get_json()["count"] == 4
    first, second, third, click = stored_events(app)
    assert first.properties == {"formName": "signup",
                                "fields": ["name", "company", "message"]}
    # Money keys go at every depth, in `fields` too; the form filter handles the rest.
    assert second.properties == {"formName": "contact", "fields": {"name": "Ann", "plan": "pro"}}
    assert third.properties == {"fields": [{"name": "city", "value": "Paris"}]}
    assert click.properties == {"password": "kept: only form fields are vetted"}


# --- e-mail addresses in disguise ----------------------------------------------------------

@pytest.mark.parametrize(("field", "column"), [("userId", "user_id"),
                                               ("anonymousId", "anonymous_id")])
def test_an_email_address_in_any_disguise_is_refused_as_an_id(client, app, std_site, field,
                                                              column):
    for valid, disguised in EMAIL_DISGUISES:
        accepted = post(client, std_site, batch(2, **{field: valid}))
        assert accepted.get_json() == {"success": True, "count": 2}
        before = stored_counts(app)
        refused = post(client, std_site, batch(2, **{field: disguised}))
        assert assert_json_error(refused, 400)["error"] == f"{field}: {EMAIL_IN_ID}"
        assert stored_counts(app) == before
    assert [getattr(row, column) for row in stored_events(app)] == [
        valid for valid, _ in EMAIL_DISGUISES for _ in range(2)]
    assert tallies(app) == {"rejected_400": len(EMAIL_DISGUISES)}
    assert_nowhere_in_the_database(app, *(disguised for _, disguised in EMAIL_DISGUISES))


@pytest.mark.parametrize("identifier", ["3b241101-e2bb-4255-8caf-4136c566a962",
                                        "1795235842-3184023133-226114920-4004522133",
                                        "usr_3f9a", "42"])
def test_opaque_ids_pass(client, app, std_site, identifier):
    """The tracker's ids (a UUID, or four random 32-bit numbers: sdk/src/ids.js) and others."""
    body = batch(1, anonymousId=identifier, userId=identifier)
    assert post(client, std_site, body).get_json() == {"success": True, "count": 1}
    (row,) = stored_events(app)
    assert (row.anonymous_id, row.user_id) == (identifier, identifier)


# --- plan gates -----------------------------------------------------------------------------

@pytest.mark.parametrize(("types", "restricted"), [
    (["performance"], ["performance"]),
    (["error"], ["error"]),
    (["pageview", "error"], ["error"]),
    (["performance", "click", "error", "performance"], ["error", "performance"]),
])
def test_paid_types_on_the_free_plan_are_refused(client, app, free_site, types, restricted):
    response = post(client, free_site, batch([event(t) for t in types]))
    body = assert_json_error(response, 403)
    subject = (f"Event type {restricted[0]} needs" if len(restricted) == 1
               else f"Event types {', '.join(restricted)} need")
    assert body == {
        "error": f"{subject} the Standard plan or above; this "
                 "site is on the free plan. Nothing was stored.",
        "restrictedTypes": restricted}
    assert stored_counts(app) == NOTHING
    assert tallies(app) == {"rejected_403_plan": 1}


@pytest.mark.parametrize("plan", ["standard", "pro"])
def test_paid_types_on_paid_plans_are_stored(client, app, make_site, plan):
    site = make_site(f"{plan}.example", plan)
    response = post(client, site, batch([event("performance", properties={"lcp": 1200.5}),
                                         event("error", properties={"message": "x"})]))
    assert response.get_json() == {"success": True, "count": 2}
    assert [row.type for row in stored_events(app)] == ["performance", "error"]


def test_free_plan_takes_every_other_type(client, app, free_site):
    types = [t for t in EVENT_TYPES if t not in ("performance", "error")]
    response = post(client, free_site, batch([event(t) for t in types]))
    assert response.get_json() == {"success": True, "count": 7}


def test_invalid_payload_is_reported_before_the_plan(client, app, free_site):
    response = post(client, free_site, batch([event("performance"), event("nope")]))
    assert assert_json_error(response, 400)["error"] == f"events.1.type: {TYPES_MESSAGE}"


# --- bots -----------------------------------------------------------------------------------

@pytest.mark.parametrize("user_agent", [GOOGLEBOT_UA, HEADLESS_UA, "python-requests/2.32.3", ""])
def test_a_bot_browser_request_stores_nothing_but_the_tally(client, app, std_site, user_agent):
    response = post(client, std_site, batch(3), Origin="https://std.example",
                    **{"User-Agent": user_agent})
    assert response.status_code == 200
    assert response.get_json() == {"success": True, "count": 0, "bot": True}
    assert stored_counts(app) == NOTHING
    assert tallies(app) == {"bot": 1}


def test_a_bot_is_answered_before_its_body_is_read(client, app, std_site):
    response = post_json(client, "/api/events", b"not json", std_site.write_headers(
        Origin="https://std.example", **{"User-Agent": GOOGLEBOT_UA}))
    assert response.get_json() == {"success": True, "count": 0, "bot": True}


@pytest.mark.parametrize("user_agent", [GOOGLEBOT_UA, "python-requests/2.32.3", "curl/8.5.0"])
def test_backends_without_origin_are_never_bot_filtered(client, app, std_site, user_agent):
    response = post(client, std_site, batch(2), **{"User-Agent": user_agent})
    assert response.get_json() == {"success": True, "count": 2}
    assert stored_counts(app)["events"] == 2
    assert tallies(app) == {}


def test_a_real_browser_is_stored(client, app, std_site):
    response = post(client, std_site, batch(2), Origin="https://std.example",
                    **{"User-Agent": CHROME_UA})
    assert response.get_json() == {"success": True, "count": 2}
    assert stored_counts(app)["events"] == 2


# --- the tally of what was not stored -------------------------------------------------------

def test_tally_counts_every_reason(make_app, make_site):
    from app.tracking.quota import keeps_session

    app = make_app(MAX_BODY_BYTES=4096, USAGE_CACHE_SECONDS=0)
    client = app.test_client()
    site = make_site("tally.example", "free", monthly_quota=1)
    other = make_site("other.example", "free")
    seed_usage(app, site.site.id, 1)  # at quota: sampling from now on
    dropped = next(f"s{i}" for i in range(1000) if not keeps_session(f"s{i}", 0.1))

    assert post(client, site, batch([event(), event("nope")])).status_code == 400
    assert post(client, site, batch([event("performance")])).status_code == 403
    assert post(client, site, batch(), Origin="https://evil.example").status_code == 403
    assert post(client, site, batch([event(properties={"p": "x" * 5000})])).status_code == 413
    sampled = batch(2, sessionId=dropped)
    assert post(client, site, sampled).get_json() == {"success": True, "count": 0,
                                                      "sampled": True}
    assert post(client, site, sampled).get_json() == {"success": True, "count": 0,
                                                      "sampled": True, "duplicate": True}
    bot = post(client, site, batch(), Origin="https://tally.example",
               **{"User-Agent": GOOGLEBOT_UA})
    assert bot.get_json()["bot"] is True
    limited = make_app(RATE_LIMIT_KEY="1/minute").test_client()
    assert post(limited, site, batch(sessionId=dropped)).status_code == 200
    assert post(limited, site, batch(sessionId=dropped)).status_code == 429

    assert tallies(app, site.site.id) == {
        "rejected_400": 1, "rejected_403_plan": 1, "rejected_403_origin": 1,
        "rejected_413": 1, "sampled": 3, "duplicate": 1, "bot": 1, "rejected_429": 1}
    assert tallies(app, other.site.id) == {}
    assert stored_counts(app)["events"] == 0


def test_unauthenticated_requests_are_not_tallied(client, app, std_site):
    assert post_json(client, "/api/events", batch(), {"X-API-Key": "egis_nope"}).status_code == 401
    assert post_json(client, "/api/events", b"{", {}).status_code == 401
    assert tallies(app) == {}


# --- OpenAPI --------------------------------------------------------------------------------

def _resolve(document, schema):
    if "$ref" in schema:
        return document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def test_both_endpoints_are_in_openapi(client):
    document = client.get("/api/openapi.json").get_json()
    for path, fields, required in (
            ("/api/events", {"id", "sessionId", "anonymousId", "timestamp", "events", "userId"},
             {"id", "sessionId", "anonymousId", "timestamp", "events"}),
            ("/api/goals", {"goal_name", "metadata", "client_timestamp"}, {"goal_name"})):
        operation = document["paths"][path]["post"]
        assert operation["security"] == [{"bearerKey": []}, {"apiKeyHeader": []}]
        assert {"200", "400", "401", "413", "415", "429"} <= set(operation["responses"])
        body = operation["requestBody"]["content"]["application/json"]["schema"]
        body = _resolve(document, body)
        assert fields <= set(body["properties"])
        assert set(body["required"]) == required
    batch_schema = _resolve(document, document["paths"]["/api/events"]["post"]["requestBody"]
                            ["content"]["application/json"]["schema"])
    events = batch_schema["properties"]["events"]
    assert (events["minItems"], events["maxItems"]) == (1, 50)
    event_schema = _resolve(document, events["items"])
    assert event_schema["properties"]["type"]["enum"] == list(EVENT_TYPES)
    assert event_schema["properties"]["name"]["maxLength"] == 128
    goal_schema = _resolve(document, document["paths"]["/api/goals"]["post"]["requestBody"]
                           ["content"]["application/json"]["schema"])
    assert (goal_schema["properties"]["goal_name"]["minLength"],
            goal_schema["properties"]["goal_name"]["maxLength"]) == (1, 64)
    restricted = document["paths"]["/api/events"]["post"]["responses"]["403"]
    restricted = _resolve(document, restricted["content"]["application/json"]["schema"])
    assert "restrictedTypes" in restricted["properties"]
    assert {"bearerKey", "apiKeyHeader"} <= set(document["components"]["securitySchemes"])


def test_the_new_refusals_are_documented_in_their_words(client):
    """docs/API.md gives the exact sentences; the OpenAPI document carries the id rule as a
    pattern that every id a client chooses may not match."""
    api = " ".join((ROOT / "docs" / "API.md").read_text().split())
    for sentence in (f"userId: {EMAIL_IN_ID}", f"events.1.timestamp: {BEFORE_ITS_BATCH}",
                     f"client_timestamp: {TOO_LONG_AGO}", f"timestamp: {TOO_LONG_AGO}",
                     "removed at every depth"):
        assert sentence in api, sentence
    schemas = client.get("/api/openapi.json").get_json()["components"]["schemas"]
    for schema, field in (("Batch", "userId"), ("Batch", "anonymousId"),
                          ("Goal", "anonymous_id"), ("ServerEvent", "identifiedUserId"),
                          ("ServerEvent", "anonymousId")):
        assert schemas[schema]["properties"][field]["not"] == {
            "type": "string", "pattern": EMAIL_IN_ID_PATTERN}, (schema, field)
    assert "not" not in schemas["Batch"]["properties"]["sessionId"]


# --- one statement per batch ----------------------------------------------------------------

@pytest.fixture
def statements(monkeypatch):
    """Every SQL statement the app executes, recorded around the real execute_sql."""
    executed: list[str] = []
    target = database.obj
    real = target.execute_sql

    def counting(sql, params=None, *args, **kwargs):
        executed.append(sql)
        return real(sql, params, *args, **kwargs)

    monkeypatch.setattr(target, "execute_sql", counting)
    return executed


@pytest.fixture
def deferred_app(make_app):
    """An app that merges the rollups later, as deployed, not in each request; built before
    `std_site` and `statements`, which then record what its requests execute."""
    return make_app(ROLLUP_MERGE_SECONDS=3600)


def test_a_warm_request_stores_50_events_in_one_statement(deferred_app, std_site, statements):
    client = deferred_app.test_client()
    assert post(client, std_site, batch(1)).status_code == 200  # warms the key and usage caches
    statements.clear()
    response = post(client, std_site, batch([event(properties={"i": i}) for i in range(50)]))
    assert response.get_json() == {"success": True, "count": 50}
    if BACKEND == "postgres":  # the statement was prepared on the connection by the first POST
        assert len(statements) == 1, statements
        assert statements[0].startswith("EXECUTE egis_store_batch(")
    else:  # one transaction: the batch, one multi-row insert of the events, the usage upsert
        inserts = [sql for sql in statements if sql.startswith('INSERT INTO "event"')]
        assert len(inserts) == 1
        assert len(statements) <= 5, statements
    with db(deferred_app):
        assert Event.select().count() == 51
        assert sorted(e.properties["i"] for e in Event.select().where(Event.properties.is_null(
            False))) == list(range(50))


def test_statement_count_does_not_grow_with_events(client, app, std_site, statements):
    assert post(client, std_site, batch(1)).status_code == 200
    statements.clear()
    post(client, std_site, batch(1))
    one = len(statements)
    statements.clear()
    post(client, std_site, batch(50))
    assert len(statements) == one
