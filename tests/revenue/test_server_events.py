"""POST /api/server/events: trusted revenue, exact to the minor unit, stored once per orderId;
ids that hide an e-mail address and times more than 400 days ago refused, money keys stripped
from the properties at every depth."""
import uuid
from datetime import datetime, timedelta

import pytest

from app.access import keys
from app.ingest.privacy import EMAIL_IN_ID
from app.tracking.quota import period_of
from app.web.bodies import NUMBER_TOO_LARGE
from app.web.schema import MAX_EPOCH_MS, TOO_LONG_AGO, epoch_ms_now
from blueprints.server import AMOUNT_RANGE
from models import Event, IngestTally, ServerEvent, Usage
from models.site import utcnow
from tests.fixtures.helpers import (
    EMAIL_DISGUISES,
    assert_json_error,
    assert_nowhere_in_the_database,
    cors_headers,
    db,
    post_json,
    rows,
)

PATH = "/api/server/events"
INT64_MAX = 2**63 - 1
DAY_MS = 86_400_000
NOW_MS = epoch_ms_now() // 1000 * 1000 - DAY_MS  # yesterday, to the second


def post(client, site, body, **kwargs):
    return post_json(client, PATH, body, site.server_headers(), **kwargs)


def stored(app) -> list[ServerEvent]:
    return rows(app, ServerEvent)


def assert_stored_nothing(app) -> None:
    assert stored(app) == []


# --- success -------------------------------------------------------------------------------


def test_minimal_event_is_stored_and_answered(client, app, std_site):
    response = post(client, std_site, {"eventName": "signup"})
    assert response.status_code == 200
    body = response.get_json()
    assert body == {"success": True, "id": body["id"], "duplicate": False}
    assert str(uuid.UUID(body["id"])) == body["id"]
    (row,) = stored(app)
    assert str(row.uid) == body["id"]
    assert row.site_id == std_site.site.id
    assert row.event_name == "signup"
    assert (row.amount_minor, row.currency, row.order_id, row.identified_user_id) == (
        None, None, None, None)
    assert row.occurred_at == row.received_at


def test_every_field_is_stored(client, app, std_site):
    body = {"eventName": "purchase", "identifiedUserId": "user-42", "amount": 19.99,
            "currency": "usd", "orderId": "order-1", "anonymousId": "anon-1",
            "sessionId": "sess-1", "timestamp": NOW_MS, "properties": {"plan": "pro", "seats": 3}}
    assert post(client, std_site, body).status_code == 200
    (row,) = stored(app)
    assert row.identified_user_id == "user-42"
    assert (row.amount_minor, row.currency) == (1999, "USD")
    assert (row.order_id, row.anonymous_id, row.session_id) == ("order-1", "anon-1", "sess-1")
    assert row.client_ts == NOW_MS
    assert row.occurred_at == datetime(1970, 1, 1) + timedelta(milliseconds=NOW_MS)
    assert row.properties == {"plan": "pro", "seats": 3}


def test_pro_plan_may_send_server_events(client, app, make_site):
    pro = make_site("pro.example", "pro")
    assert post(client, pro, {"eventName": "signup"}).status_code == 200
    assert len(stored(app)) == 1


def test_null_optional_fields_are_absent(client, app, std_site):
    body = {"eventName": "x", "identifiedUserId": None, "amount": None, "revenue_cents": None,
            "currency": None, "orderId": None, "anonymousId": None, "sessionId": None,
            "timestamp": None, "properties": None}
    assert post(client, std_site, body).status_code == 200
    (row,) = stored(app)
    assert (row.amount_minor, row.currency, row.properties, row.client_ts) == (
        None, None, None, None)


def test_unknown_fields_are_ignored(client, app, std_site):
    assert post(client, std_site, {"eventName": "x", "revenue": 5, "extra": [1]}).status_code == 200
    assert stored(app)[0].amount_minor is None


def test_gzip_body_is_accepted(client, app, std_site):
    body = '{"eventName": "purchase", "amount": 1.15, "currency": "EUR"}'
    assert post(client, std_site, body, gzipped=True).status_code == 200
    assert stored(app)[0].amount_minor == 115


def test_future_timestamp_is_clamped_to_receive_time(client, app, std_site):
    future = int((utcnow() - datetime(1970, 1, 1)).total_seconds() * 1000) + 86_400_000
    assert post(client, std_site, {"eventName": "x", "timestamp": future}).status_code == 200
    (row,) = stored(app)
    assert row.client_ts == future
    assert row.occurred_at == row.received_at


def test_fractional_timestamp_keeps_whole_milliseconds(client, app, std_site):
    body = f'{{"eventName": "x", "timestamp": {NOW_MS}.9}}'
    assert post(client, std_site, body).status_code == 200
    assert stored(app)[0].client_ts == NOW_MS


def test_properties_lose_money_keys_and_keep_numbers(client, app, std_site):
    body = ('{"eventName": "x", "properties": {"Amount": 5, "REVENUE": 1, "revenue_cents": 2, '
            '"currency": "USD", "ratio": 0.25, "nested": {"amount": 1.5, "rate": 0.5}}}')
    assert post(client, std_site, body).status_code == 200
    # Money keys go at every depth: the columns are the one place money lives.
    assert stored(app)[0].properties == {"ratio": 0.25, "nested": {"rate": 0.5}}


def test_properties_lose_money_keys_at_every_depth(client, app, std_site):
    """At depth 1 and 3, and in objects within a list; their siblings stay."""
    properties = {"order": {"Currency": "EUR", "lines": 2},
                  "a": {"b": {"c": {"revenue_cents": 500, "kept": "yes"}}},
                  "lines": [{"sku": "A1", "amount": 19.99}, {"sku": "B2", "REVENUE": 5}]}
    sale = {"eventName": "purchase", "amount": 24.99, "currency": "EUR", "properties": properties}
    assert post(client, std_site, sale).status_code == 200
    (row,) = stored(app)
    assert (row.amount_minor, row.currency) == (2499, "EUR")
    assert row.properties == {"order": {"lines": 2}, "a": {"b": {"c": {"kept": "yes"}}},
                              "lines": [{"sku": "A1"}, {"sku": "B2"}]}


def test_no_cors_headers(client, std_site):
    response = post_json(client, PATH, {"eventName": "x"},
                         std_site.server_headers(Origin="https://std.example"))
    assert response.status_code == 200
    assert cors_headers(response) == []
    preflight = client.options(PATH, headers={"Origin": "https://std.example",
                                              "Access-Control-Request-Method": "POST"})
    assert cors_headers(preflight) == []


# --- money ---------------------------------------------------------------------------------

# (JSON text of amount, currency as sent, stored minor units, stored currency)
AMOUNTS = [
    ("19.99", "USD", 1999, "USD"),
    ("500", "JPY", 500, "JPY"),
    ("1.234", "BHD", 1234, "BHD"),
    ("0.001", "KWD", 1, "KWD"),
    ("-5", "USD", -500, "USD"),  # a refund
    ("-19.99", "usd", -1999, "USD"),
    ("1.15", "EUR", 115, "EUR"),  # 1.15 * 100 is 114.99999999999999 in floats
    ("4.35", "EUR", 435, "EUR"),
    ("0.1", "eur", 10, "EUR"),
    ("19.990", "USD", 1999, "USD"),  # trailing zeros are not extra decimals
    ("500.0", "JPY", 500, "JPY"),
    ("1e2", "USD", 10000, "USD"),
    ("1.5E1", "USD", 1500, "USD"),
    ("0", "USD", 0, "USD"),
    ("-0", "USD", 0, "USD"),
    ("0.000", "USD", 0, "USD"),
    ("1000000000000000", "USD", 10**17, "USD"),  # the largest amount, 10^15 (MAX_AMOUNT)
    ("-1000000000000000.000", "BHD", -(10**18), "BHD"),
    ("1e15", "JPY", 10**15, "JPY"),
]


@pytest.mark.parametrize(("amount", "currency", "minor", "code"), AMOUNTS)
def test_amount_is_stored_in_exact_minor_units(client, app, std_site, amount, currency, minor,
                                               code):
    body = f'{{"eventName": "purchase", "amount": {amount}, "currency": "{currency}"}}'
    assert post(client, std_site, body).status_code == 200
    (row,) = stored(app)
    assert (row.amount_minor, row.currency) == (minor, code)


# (JSON text of revenue_cents, currency, stored minor units): minor units of each currency.
MINOR_AMOUNTS = [
    ("1999", "USD", 1999),
    ("500", "JPY", 500),
    ("1234", "BHD", 1234),
    ("-250", "usd", -250),
    ("0", "EUR", 0),
    (str(INT64_MAX), "USD", INT64_MAX),
    (str(-INT64_MAX), "USD", -INT64_MAX),
    # Whole numbers however written (JSON Schema's integer), read exactly, even beyond 2^53.
    ("10053316.0", "USD", 10053316),
    ("1999.000", "USD", 1999),
    ("1.999e3", "USD", 1999),
    ("-25E1", "USD", -250),
    ("-0.0", "USD", 0),
    (f"{INT64_MAX}.0", "USD", INT64_MAX),
    (f"{-INT64_MAX}.0", "USD", -INT64_MAX),
    ("9007199254740993.0", "USD", 2**53 + 1),
]


@pytest.mark.parametrize(("cents", "currency", "minor"), MINOR_AMOUNTS)
def test_revenue_cents_are_minor_units_as_sent(client, app, std_site, cents, currency, minor):
    body = f'{{"eventName": "purchase", "revenue_cents": {cents}, "currency": "{currency}"}}'
    assert post(client, std_site, body).status_code == 200
    (row,) = stored(app)
    assert (row.amount_minor, row.currency) == (minor, currency.upper())


TOO_MANY_DECIMALS = [
    ("19.999", "USD", "amount: Amount has more decimal places than USD allows (2)."),
    ("0.001", "EUR", "amount: Amount has more decimal places than EUR allows (2)."),
    ("500.5", "JPY", "amount: Amount has more decimal places than JPY allows (0)."),
    ("1.2345", "BHD", "amount: Amount has more decimal places than BHD allows (3)."),
    ("1e-2", "JPY", "amount: Amount has more decimal places than JPY allows (0)."),
    ("-1e-999999", "USD", "amount: Amount has more decimal places than USD allows (2)."),
]


@pytest.mark.parametrize(("amount", "currency", "error"), TOO_MANY_DECIMALS)
def test_more_decimals_than_the_currency_has_is_refused(client, app, std_site, amount,
                                                        currency, error):
    body = f'{{"eventName": "purchase", "amount": {amount}, "currency": "{currency}"}}'
    assert_json_error(post(client, std_site, body), 400, error)
    assert_stored_nothing(app)


@pytest.mark.parametrize("amount", ["1000000000000000.01", "-1000000000000001", "1e17",
                                    "92233720368547758.07", "-4.26e273", "1E+999"])
def test_amount_beyond_10_to_the_15_is_refused(client, app, std_site, amount):
    body = f'{{"eventName": "purchase", "amount": {amount}, "currency": "USD"}}'
    response = post(client, std_site, body)
    if amount == "1E+999":  # not even a double: the JSON parser refuses it first
        assert_json_error(response, 400, f"amount: {NUMBER_TOO_LARGE}")
    else:
        assert_json_error(response, 400, f"amount: {AMOUNT_RANGE}")
    assert_stored_nothing(app)


def test_huge_exponent_amount_is_a_400(client, app, std_site):
    body = '{"eventName": "purchase", "amount": 1E+999999, "currency": "USD"}'
    assert_json_error(post(client, std_site, body), 400)
    assert_stored_nothing(app)


NOT_A_NUMBER = "amount: Not a valid number (a JSON number is required)."
NOT_AN_INTEGER = ("revenue_cents: Not a valid integer (a whole JSON number such as 1999 is "
                  "required).")


@pytest.mark.parametrize("amount", ['"19.99"', "true", "false", "[]", "{}", '""'])
def test_amount_must_be_a_json_number(client, app, std_site, amount):
    body = f'{{"eventName": "purchase", "amount": {amount}, "currency": "USD"}}'
    assert_json_error(post(client, std_site, body), 400, NOT_A_NUMBER)
    assert_stored_nothing(app)


@pytest.mark.parametrize("cents", ["1999.5", "1999.000001", "-0.5", "1e-3", "1.9995e3", '"12"',
                                   "true", "[]", "null1"])
def test_revenue_cents_must_be_a_json_integer(client, app, std_site, cents):
    body = f'{{"eventName": "purchase", "revenue_cents": {cents}, "currency": "USD"}}'
    response = post(client, std_site, body)
    if cents == "null1":
        assert_json_error(response, 400)  # not JSON at all
    else:
        assert_json_error(response, 400, NOT_AN_INTEGER)
    assert_stored_nothing(app)


RANGE = (f"revenue_cents: Must be greater than or equal to {-INT64_MAX} and less than or equal "
         f"to {INT64_MAX}.")


@pytest.mark.parametrize("cents", [str(INT64_MAX + 1), str(-INT64_MAX - 1), "1" * 40,
                                   f"{INT64_MAX + 1}.0", f"{-INT64_MAX - 1}.0", "1e300"])
def test_revenue_cents_beyond_int64_is_refused(client, app, std_site, cents):
    body = f'{{"eventName": "purchase", "revenue_cents": {cents}, "currency": "USD"}}'
    assert_json_error(post(client, std_site, body), 400, RANGE)
    assert_stored_nothing(app)


def test_amount_and_revenue_cents_together_are_refused(client, app, std_site):
    body = {"eventName": "purchase", "amount": 19.99, "revenue_cents": 1999, "currency": "USD"}
    assert_json_error(post(client, std_site, body), 400,
                      "amount: Send either amount or revenue_cents, not both.")
    assert_stored_nothing(app)


@pytest.mark.parametrize("money", [{"amount": 5}, {"revenue_cents": 500}])
def test_money_without_currency_is_refused(client, app, std_site, money):
    assert_json_error(post(client, std_site, {"eventName": "purchase", **money}), 400,
                      "currency: Required with amount or revenue_cents.")
    assert_stored_nothing(app)


def test_currency_without_money_is_refused(client, app, std_site):
    # Decision: a currency alone is most likely an amount sent under another name ("revenue",
    # "value", "price"); refusing it surfaces the bug instead of storing a revenue-less event.
    assert_json_error(post(client, std_site, {"eventName": "purchase", "currency": "USD"}), 400,
                      "currency: Only allowed with amount or revenue_cents.")
    assert_stored_nothing(app)


INVALID_CURRENCY = "currency: Must be an active ISO 4217 currency code, such as USD, EUR or JPY."


@pytest.mark.parametrize("currency", ["XXX", "XAU", "XTS", "DEM", "HRK", "US", "USDX", "", "U$D",
                                      " USD", "usd\u0000", "Usd", "uSD"])  # mixed case: no
def test_currency_must_be_an_active_iso_code(client, app, std_site, currency):
    body = {"eventName": "purchase", "amount": 5, "currency": currency}
    response = post(client, std_site, body)
    if "\u0000" in currency:
        assert_json_error(response, 400, "currency: NUL characters are not allowed.")
    else:
        assert_json_error(response, 400, INVALID_CURRENCY)
    assert_stored_nothing(app)


@pytest.mark.parametrize("currency", [840, True, ["USD"], {"code": "USD"}])
def test_currency_must_be_a_string(client, app, std_site, currency):
    body = {"eventName": "purchase", "amount": 5, "currency": currency}
    assert_json_error(post(client, std_site, body), 400, "currency: Not a valid string.")
    assert_stored_nothing(app)


# --- field rules ---------------------------------------------------------------------------


def length_error(field: str) -> str:
    return f"{field}: Length must be between 1 and 128."


def test_event_name_is_required(client, app, std_site):
    assert_json_error(post(client, std_site, {"amount": 1, "currency": "USD"}), 400,
                      "eventName: Missing data for required field.")
    assert_json_error(post(client, std_site, {"eventName": None}), 400,
                      "eventName: Field may not be null.")
    assert_stored_nothing(app)


@pytest.mark.parametrize("field", ["eventName", "identifiedUserId", "orderId", "anonymousId",
                                   "sessionId"])
def test_string_bounds_at_128_and_129(client, app, std_site, field):
    body = {"eventName": "x", field: "é" * 128}
    assert post(client, std_site, body).status_code == 200
    for too_long in ("é" * 129, ""):
        assert_json_error(post(client, std_site, {"eventName": "x", field: too_long}), 400,
                          length_error(field))
    assert len(stored(app)) == 1


@pytest.mark.parametrize("field", ["eventName", "identifiedUserId", "orderId", "anonymousId",
                                   "sessionId"])
@pytest.mark.parametrize("value", [5, True, ["x"], {"a": 1}])
def test_ids_must_be_strings(client, app, std_site, field, value):
    assert_json_error(post(client, std_site, {"eventName": "x", field: value}), 400,
                      f"{field}: Not a valid string.")
    assert_stored_nothing(app)


@pytest.mark.parametrize("user_id", ["jane@example.com", " Jane.Doe+shop@Example.CO.UK ",
                                     "x@xn--bcher-kva.example", "a@b"])
def test_identified_user_id_may_not_be_an_email(client, app, std_site, user_id):
    assert_json_error(post(client, std_site, {"eventName": "x", "identifiedUserId": user_id}),
                      400, f"identifiedUserId: {EMAIL_IN_ID}")
    assert_stored_nothing(app)


@pytest.mark.parametrize("field", ["identifiedUserId", "anonymousId"])
def test_an_email_address_in_any_disguise_is_refused_as_an_id(client, app, std_site, field):
    for valid, disguised in EMAIL_DISGUISES:
        sale = {"eventName": "purchase", "amount": 5, "currency": "USD"}
        assert post(client, std_site, {**sale, field: valid}).status_code == 200
        refused = post(client, std_site, {**sale, field: disguised})
        assert_json_error(refused, 400, f"{field}: {EMAIL_IN_ID}")
    column = "identified_user_id" if field == "identifiedUserId" else "anonymous_id"
    assert [getattr(row, column) for row in stored(app)] == [
        valid for valid, _ in EMAIL_DISGUISES]
    assert_nowhere_in_the_database(app, *(disguised for _, disguised in EMAIL_DISGUISES))


@pytest.mark.parametrize("user_id", ["user-42", "usr_3f9a", "a.b", "42"])
def test_opaque_user_ids_are_kept_as_sent(client, app, std_site, user_id):
    assert post(client, std_site, {"eventName": "x", "identifiedUserId": user_id}
                ).status_code == 200
    assert stored(app)[0].identified_user_id == user_id


TIMESTAMP_RANGE = ("timestamp: Must be greater than or equal to 0 and less than or equal to "
                   f"{MAX_EPOCH_MS}.")


def test_timestamp_bounds(client, app, std_site):
    for good in (epoch_ms_now() - 399 * DAY_MS, MAX_EPOCH_MS):
        assert post(client, std_site, {"eventName": "x", "timestamp": good}).status_code == 200
    for bad in (-1, MAX_EPOCH_MS + 1):
        assert_json_error(post(client, std_site, {"eventName": "x", "timestamp": bad}), 400,
                          TIMESTAMP_RANGE)
    assert [row.client_ts for row in stored(app)][1:] == [MAX_EPOCH_MS]


def test_a_timestamp_more_than_400_days_ago_is_refused(client, app, std_site):
    """Before: a timestamp of 0 stored the sale in 1970."""
    now = epoch_ms_now()
    for days in (1, 399):
        sale = {"eventName": "purchase", "revenue_cents": 500, "currency": "USD",
                "timestamp": now - days * DAY_MS}
        assert post(client, std_site, sale).status_code == 200
    assert [round((row.received_at - row.occurred_at) / timedelta(days=1))
            for row in stored(app)] == [1, 399]
    for old in (now - 401 * DAY_MS, 0, 1_000_000_000_000):
        sale = {"eventName": "purchase", "revenue_cents": 500, "currency": "USD",
                "timestamp": old}
        assert_json_error(post(client, std_site, sale), 400, f"timestamp: {TOO_LONG_AGO}")
    assert len(stored(app)) == 2
    with db(app):
        assert {row.reason: row.count for row in IngestTally.select()} == {"rejected_400": 3}


@pytest.mark.parametrize("timestamp", ['"1780000000000"', "true", "[]", '"2026-05-01"'])
def test_timestamp_must_be_a_json_number(client, app, std_site, timestamp):
    body = f'{{"eventName": "x", "timestamp": {timestamp}}}'
    assert_json_error(post(client, std_site, body), 400,
                      "timestamp: Not a valid number (a JSON number is required).")
    assert_stored_nothing(app)


@pytest.mark.parametrize(("properties", "error"), [
    ('"text"', "properties: Not a valid mapping type."),
    ("[1, 2]", "properties: Not a valid mapping type."),
    ('{"a\\u0000b": 1}', "properties: NUL characters are not allowed."),
    ('{"a": "b\\u0000"}', "properties: NUL characters are not allowed."),
])
def test_properties_must_be_a_clean_object(client, app, std_site, properties, error):
    body = f'{{"eventName": "x", "properties": {properties}}}'
    assert_json_error(post(client, std_site, body), 400, error)
    assert_stored_nothing(app)


def test_properties_are_capped_at_16_kib(client, app, std_site):
    big = {"eventName": "x", "properties": {"k": "v" * (16 * 1024)}}
    body = assert_json_error(post(client, std_site, big), 400)
    assert body["error"].startswith("properties: Too large: at most 16384 bytes as JSON")
    assert_stored_nothing(app)


@pytest.mark.parametrize("depth", [100, 300, 900])
def test_deeply_nested_properties_are_a_400(client, app, std_site, depth):
    body = '{"eventName": "x", "properties": {"a": ' + "[" * depth + "1.5" + "]" * depth + "}}"
    body = assert_json_error(post(client, std_site, body), 400)
    assert body["error"].startswith("properties: Nested too deeply") or "JSON" in body["error"]
    assert_stored_nothing(app)


NASTY_BODIES = [
    b"",
    b"not json",
    b"{",
    b"[]",
    b'[{"eventName": "x"}]',
    b'"eventName"',
    b"null",
    b"42",
    b'{"eventName": "\\u0000"}',
    b'{"eventName": "a\\ud800"}',
    b'{"eventName": "a\\udfff b"}',
    b'{"eventName": "\xff\xfe"}',
    b"[" * 5000 + b"]" * 5000,
    b'{"eventName": "x", "p": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    b'{"eventName": "x", "amount": 1e999, "currency": "USD"}',
    b'{"eventName": "x", "amount": -1e999, "currency": "USD"}',
    b'{"eventName": "x", "amount": 1E+999999, "currency": "USD"}',
    b'{"eventName": "x", "amount": NaN, "currency": "USD"}',
    b'{"eventName": "x", "amount": Infinity, "currency": "USD"}',
    b'{"eventName": "x", "revenue_cents": ' + b"9" * 5000 + b', "currency": "USD"}',
    b'{"eventName": "x", "amount": 0.' + b"1" * 5000 + b', "currency": "USD"}',
    b'{"eventName": "x", "timestamp": 1e999}',
    b'{"eventName": "x", "timestamp": 1E+999999}',
    b'{"eventName": "x", "timestamp": ' + b"9" * 5000 + b"}",
    b'{"eventName": "x",}',
    b"{'eventName': 'x'}",
]


@pytest.mark.parametrize("body", NASTY_BODIES, ids=lambda b: repr(b[:40]))
def test_nasty_bodies_are_a_json_400(client, app, std_site, body):
    assert_json_error(post(client, std_site, body), 400)
    assert_stored_nothing(app)


@pytest.mark.parametrize(("body", "field"), [
    (b'{"eventName": "x", "amount": 1e400, "currency": "USD"}', "amount"),
    (b'{"eventName": "x", "timestamp": -1E+999999}', "timestamp"),
    (b'{"eventName": "x", "properties": {"a": [1, 2e308]}}', "properties.a.1"),
])
def test_a_number_beyond_a_double_names_its_field(client, app, std_site, body, field):
    assert_json_error(post(client, std_site, body), 400, f"{field}: {NUMBER_TOO_LARGE}")
    assert_stored_nothing(app)


def test_not_json_content_type_is_415(client, app, std_site):
    response = post(client, std_site, '{"eventName": "x"}', content_type="text/plain")
    assert_json_error(response, 415)
    assert_stored_nothing(app)


def test_rejections_are_tallied(client, app, std_site):
    post(client, std_site, {"eventName": ""})
    with db(app):
        reasons = {t.reason: t.count for t in IngestTally.select()}
    assert reasons == {"rejected_400": 1}


# --- keys and plans ------------------------------------------------------------------------

MISSING = "Missing API key: send it as Authorization: Bearer <key>."
INVALID = "Invalid API key: unknown or revoked."


def test_missing_key_is_401(client, app):
    assert_json_error(post_json(client, PATH, {"eventName": "x"}), 401, MISSING)
    assert_stored_nothing(app)


def test_unknown_server_key_is_401(client, app, std_site):
    headers = {"Authorization": "Bearer egiss_" + "A" * 43}
    assert_json_error(post_json(client, PATH, {"eventName": "x"}, headers), 401, INVALID)
    assert_stored_nothing(app)


def test_write_key_is_403(client, app, std_site):
    headers = {"Authorization": f"Bearer {std_site.write_key}"}
    assert_json_error(post_json(client, PATH, {"eventName": "x"}, headers), 403,
                      "This endpoint takes a server key; a write (tracking) key was given.")
    assert_stored_nothing(app)


@pytest.mark.parametrize("kind", ["write", "server"])
def test_x_api_key_header_is_not_read(client, app, std_site, kind):
    key = std_site.write_key if kind == "write" else std_site.server_key
    assert_json_error(post_json(client, PATH, {"eventName": "x"}, {"X-API-Key": key}), 401,
                      "This endpoint does not read X-API-Key: send the server key as "
                      "Authorization: Bearer <key>.")
    assert_stored_nothing(app)


def test_revoked_server_key_is_401(client, app, std_site):
    with db(app):
        keys.revoke(std_site.server_key)
    assert_json_error(post(client, std_site, {"eventName": "x"}), 401, INVALID)
    assert_stored_nothing(app)


FREE_PLAN = ("Server events need the Standard plan or above; this site is on the free plan. "
             "Nothing was stored.")


@pytest.mark.parametrize("body", [{"eventName": "purchase", "amount": 5, "currency": "USD"},
                                  {"eventName": "signup"}, b"not even json"])
def test_free_plan_is_403_and_stores_nothing(client, app, free_site, body):
    assert_json_error(post(client, free_site, body), 403, FREE_PLAN)
    assert_stored_nothing(app)
    with db(app):
        reasons = {t.reason: t.count for t in IngestTally.select()}
    assert reasons == {"rejected_403_plan": 1}


def test_rate_limit_is_per_key(make_app, std_site):
    client = make_app(RATE_LIMIT_KEY="2/minute").test_client()
    for _ in range(2):
        assert post(client, std_site, {"eventName": "x"}).status_code == 200
    response = post(client, std_site, {"eventName": "x"})
    assert_json_error(response, 429)
    assert response.headers["Retry-After"]


# --- idempotency, quota, the join ----------------------------------------------------------


def test_repeated_order_id_is_stored_once_with_the_first_id(client, app, std_site):
    body = {"eventName": "purchase", "amount": 19.99, "currency": "USD", "orderId": "o-1"}
    first = post(client, std_site, body).get_json()
    again = post(client, std_site, {**body, "amount": 25}).get_json()
    assert first["duplicate"] is False
    assert again == {"success": True, "id": first["id"], "duplicate": True}
    (row,) = stored(app)
    assert (str(row.uid), row.amount_minor) == (first["id"], 1999)  # the first copy wins


def test_order_ids_are_unique_per_site_not_globally(client, app, std_site, make_site):
    other = make_site("other.example", "pro")
    body = {"eventName": "purchase", "orderId": "o-1"}
    ours = post(client, std_site, body).get_json()
    theirs = post(client, other, body).get_json()
    assert not ours["duplicate"] and not theirs["duplicate"]
    assert ours["id"] != theirs["id"]
    assert len(stored(app)) == 2


def test_events_without_order_id_are_never_duplicates(client, app, std_site):
    body = {"eventName": "purchase", "amount": 5, "currency": "USD"}
    answers = [post(client, std_site, body).get_json() for _ in range(3)]
    assert [a["duplicate"] for a in answers] == [False] * 3
    assert len({a["id"] for a in answers}) == 3
    assert len(stored(app)) == 3


def test_order_ids_differ_by_case(client, app, std_site):
    for order in ("ABC", "abc"):
        assert post(client, std_site, {"eventName": "x", "orderId": order}
                    ).get_json()["duplicate"] is False
    assert len(stored(app)) == 2


def test_over_quota_revenue_is_neither_sampled_nor_counted(make_app, make_site):
    site = make_site("busy.example", "standard", monthly_quota=10)
    app = make_app(SAMPLE_RATE=0.0)  # at quota every tracking event would be dropped
    with db(app):
        Usage.create(site_id=site.site.id, period=period_of(utcnow()), shard=15, events=1000)
    client = app.test_client()
    for order in ("o-1", "o-2", "o-3"):
        body = {"eventName": "purchase", "amount": 9.5, "currency": "USD", "orderId": order}
        response = post(client, site, body)
        assert response.status_code == 200
        assert response.get_json()["duplicate"] is False
        assert "sampled" not in response.get_json()
    assert [row.amount_minor for row in stored(app)] == [950, 950, 950]
    with db(app):
        assert sum(u.events for u in Usage.select()) == 1000


def test_revenue_joins_the_visit_through_the_identified_user(client, app, std_site):
    now = int((utcnow() - datetime(1970, 1, 1)).total_seconds() * 1000)
    batch = {"id": "b-1", "sessionId": "sess-9", "anonymousId": "anon-9", "userId": "user-42",
             "timestamp": now,
             "events": [{"type": "pageview", "timestamp": now, "referrer": "https://news.example/",
                         "pageUrl": "https://std.example/?utm_source=newsletter"}]}
    assert post_json(client, "/api/events", batch, std_site.write_headers()).status_code == 200
    sale = {"eventName": "purchase", "identifiedUserId": "user-42", "amount": 49,
            "currency": "EUR", "orderId": "o-9"}
    assert post(client, std_site, sale).status_code == 200
    with db(app):
        joined = (ServerEvent
                  .select(ServerEvent.amount_minor, Event.referrer, Event.page_url)
                  .join(Event, on=(Event.site_id == ServerEvent.site_id)
                        & (Event.user_id == ServerEvent.identified_user_id))
                  .dicts().get())
    assert joined == {"amount_minor": 4900, "referrer": "https://news.example/",
                      "page_url": "https://std.example/?utm_source=newsletter"}


# --- documentation -------------------------------------------------------------------------


def test_documented_in_openapi(client):
    document = client.get("/api/openapi.json").get_json()
    operation = document["paths"][PATH]["post"]
    assert operation["security"] == [{"bearerKey": []}]
    assert {"200", "400", "401", "403", "429"} <= set(operation["responses"])
    schemas = document["components"]["schemas"]
    request = schemas[operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
                      .rsplit("/", 1)[1]]
    assert request["required"] == ["eventName"]
    properties = request["properties"]
    assert properties["amount"]["type"] == ["number", "null"]
    assert properties["revenue_cents"]["type"] == ["integer", "null"]
    assert properties["eventName"]["maxLength"] == 128
    answer = schemas[operation["responses"]["200"]["content"]["application/json"]["schema"]
                     ["$ref"].rsplit("/", 1)[1]]
    assert set(answer["required"]) == {"success", "id", "duplicate"}
