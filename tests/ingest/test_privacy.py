"""app.ingest.privacy: money stripping, e-mail and card detection, ids that may hold an e-mail
address, form_submit field filtering."""

import copy

import orjson
import pytest

from app.ingest.privacy import (
    MONEY_KEYS,
    filter_form_fields,
    is_sensitive_field_name,
    looks_like_card_number,
    looks_like_email,
    luhn_valid,
    may_hold_email,
    sanitize_form_submit,
    strip_money,
)
from app.web.schema import MAX_PROPERTIES_BYTES

# --- strip_money ------------------------------------------------------------------------------


def test_money_keys() -> None:
    assert frozenset({"amount", "revenue", "revenue_cents", "currency"}) == MONEY_KEYS


@pytest.mark.parametrize(
    "key", ["amount", "Amount", "AMOUNT", "revenue", "Revenue", "revenue_cents", "REVENUE_CENTS",
            "currency", "CURRENCY", "cUrReNcY"],
)  # fmt: skip
def test_strip_money_removes_any_case(key: str) -> None:
    assert strip_money({key: 1, "plan": "pro"}) == {"plan": "pro"}


def test_strip_money_removes_all_money_keys_and_keeps_the_rest() -> None:
    properties = {"Amount": 9.99, "currency": "USD", "revenue": 1, "revenue_cents": 999, "a": 1}
    original = copy.deepcopy(properties)
    assert strip_money(properties) == {"a": 1}
    assert properties == original


def _nested(depth: int, leaf: dict) -> dict:
    """`leaf` `depth` objects down: {"l1": {"l2": ... leaf}}, each level with a sibling key."""
    for level in range(depth, 0, -1):
        leaf = {f"l{level}": leaf, f"keep{level}": level}
    return leaf


@pytest.mark.parametrize("depth", [1, 3, 63])
def test_strip_money_removes_money_keys_at_every_depth(depth: int) -> None:
    money = {"Amount": 10, "currency": "EUR", "REVENUE": 3, "revenue_cents": 300, "sku": "A1"}
    properties = _nested(depth, money)
    original = copy.deepcopy(properties)
    assert strip_money(properties) == _nested(depth, {"sku": "A1"})
    assert properties == original


def test_strip_money_looks_into_objects_within_lists() -> None:
    properties = {"items": [{"sku": "A1", "amount": 5}, "plain", [{"Currency": "EUR", "q": 1}],
                            {"nested": {"revenue": 2, "k": [1, {"REVENUE_CENTS": 9}]}}],
                  "currency_code": "EUR"}
    assert strip_money(properties) == {
        "items": [{"sku": "A1"}, "plain", [{"q": 1}], {"nested": {"k": [1, {}]}}],
        "currency_code": "EUR"}


@pytest.mark.parametrize(
    "properties",
    [{}, {"plan": "pro", "amounts": 3, "currency_code": "EUR", " amount": 1},
     {"cart": {"items": [{"sku": "A1", "price": 5}], "note": "amount"}, "list": ["currency"]},
     {"text": '"amount": 5', "quoted": 'x"amount":'}, {"amountX": {"y": 1}}],
)
def test_strip_money_returns_the_same_object_when_nothing_matches(properties: dict) -> None:
    """Values that read like a money key, keys that contain one: nothing is removed."""
    assert strip_money(properties) is properties


def test_a_key_that_reads_like_a_money_key_as_text_is_kept() -> None:
    """The key `x"amount` is written `"x\\"amount":` in JSON: the text search finds a money
    key, the walk finds none and keeps it."""
    properties = {'x"amount': 1, "y": {'"currency': 2}}
    assert strip_money(properties) == {'x"amount': 1, "y": {'"currency': 2}}


def test_strip_money_tolerates_non_str_keys() -> None:
    assert strip_money({1: "x", "Currency": "EUR"}) == {1: "x"}
    assert strip_money({1: {"amount": 1, "a": 2}, None: 2}) == {1: {"a": 2}, None: 2}


def test_no_character_beyond_ascii_lowers_into_a_money_key() -> None:
    """strip_money searches the JSON text with ASCII case folding: right only if str.lower(),
    the rule, makes no money key of a character beyond ASCII (the Kelvin sign lowers to "k",
    "İ" to "i" and a combining dot: neither is in a money key)."""
    letters = set("".join(MONEY_KEYS))
    lowering_into_them = [char for char in map(chr, range(0x80, 0x110000))
                          if char.lower() and set(char.lower()) <= letters]
    assert lowering_into_them == []


def test_strip_money_keeps_a_value_at_the_size_bound_within_it() -> None:
    """16 KiB of properties with money nested in them: stripping only ever removes."""
    properties = {"rows": [{"amount": index, "k": "v" * 40} for index in range(240)]}
    assert len(orjson.dumps(properties)) <= MAX_PROPERTIES_BYTES
    stripped = strip_money(properties)
    assert stripped == {"rows": [{"k": "v" * 40}] * 240}
    assert len(orjson.dumps(stripped)) < len(orjson.dumps(properties))


# --- ids that may hold an e-mail address ------------------------------------------------------


@pytest.mark.parametrize("identifier", [
    "alice@example.com", "<alice@example.com>", "alice%40example.com", "alice%40",
    "alice\uff20example.com", "alice\ufe6bexample.com", "@", "a@b", "user@localhost",
])  # fmt: skip
def test_an_id_with_an_at_sign_in_any_spelling_may_hold_an_email(identifier: str) -> None:
    assert may_hold_email(identifier)


@pytest.mark.parametrize("identifier", [
    "-", "user-42", "usr_3f9a", "42", "3b241101-e2bb-4255-8caf-4136c566a962",
    "1795235842-3184023133-226114920-4004522133", "a%20b", "%4", "40", "alice at example.com",
])  # fmt: skip
def test_an_opaque_id_may_not_hold_an_email(identifier: str) -> None:
    """The storage-free "-", uuids (the tracker's randomUUID) and the tracker's fallback of
    four random 32-bit numbers joined by "-" (sdk/src/ids.js), ordinary opaque ids."""
    assert not may_hold_email(identifier)


# --- e-mail and card detection ----------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    ["jane@example.com", "Jane.Doe+news@mail.example.co.uk", " jane@example.org ",
     "o'brien@example.ie", "user@xn--80ak6aa92e.com", "ivan@пример.рф", "a@b.museum"],
)  # fmt: skip
def test_looks_like_email(value: str) -> None:
    assert looks_like_email(value)


@pytest.mark.parametrize(
    "value",
    ["", "jane", "jane@", "@example.com", "jane@example", "jane doe@example.com",
     "jane@exa mple.com", "jane@@example.com", "a@b.c", "jane@example.c0m", "v1.2@3.4",
     "x" * 300 + "@example.com", None, 42],
)  # fmt: skip
def test_does_not_look_like_email(value: object) -> None:
    assert not looks_like_email(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("digits", ["4111111111111111", "4242424242424242", "79927398713", "0"])
def test_luhn_valid(digits: str) -> None:
    assert luhn_valid(digits)


@pytest.mark.parametrize(
    "digits", ["4111111111111112", "4242424242424241", "79927398710", "", "4111 1111 1111 1111",
               "4111-1111-1111-1111", "abc", "٤١١١١١١١١١١١١١١١"],
)  # fmt: skip
def test_luhn_invalid(digits: str) -> None:
    assert not luhn_valid(digits)


@pytest.mark.parametrize(
    "value",
    ["4111 1111 1111 1111", "4242424242424242", "4111-1111-1111-1111", "5555555555554444",
     "378282246310005", "6011 0009 9013 9424", " 4111111111111111 ", 4111111111111111],
)  # fmt: skip
def test_looks_like_card_number(value: object) -> None:
    assert looks_like_card_number(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "value",
    ["4111111111111112", "424242424242", "42424242424242424242", "4111.1111.1111.1111",
     "card 4111111111111111", "", True, 4111111111111112, 2**70, None,
     pytest.param(10**5000, id="huge-int")],
)  # fmt: skip
def test_does_not_look_like_card_number(value: object) -> None:
    assert not looks_like_card_number(value)  # type: ignore[arg-type]


# --- field names ------------------------------------------------------------------------------

SENSITIVE_NAMES = [
    # password
    "password", "Password", "passwd", "pwd", "new_password", "confirmPassword", "current-password",
    # e-mail
    "email", "e-mail", "E-Mail", "user_email", "userEmail", "emailAddress", "EMAIL", "mail",
    # phone
    "phone", "phoneNumber", "tel", "tel-national", "telNo", "telephone", "mobile", "mobile_number",
    # card
    "card", "cardNumber", "cardnumber", "card-number", "cc-number", "cc_exp", "ccNumber", "cvv",
    "CVV2", "cvc", "securityCode", "creditCard",
    # bank, national identifiers
    "iban", "IBAN", "bank_iban", "ssn", "SSN", "social_security_number", "socialSecurityNumber",
    "social security",
    # tokens and secrets
    "token", "csrf_token", "csrfToken", "csrfmiddlewaretoken", "authenticity_token", "secret",
    "client_secret", "otp", "otp-code", "one-time-code",
]  # fmt: skip
HARMLESS_NAMES = [
    "username", "user_name", "telescope", "hotel", "cardinal", "discard", "message", "subject",
    "company", "newsletter", "mailing_list", "first_name", "comment", "country", "quantity",
    "classname", "passenger", "footprint", "plan", "search", "q",
]  # fmt: skip


@pytest.mark.parametrize("name", SENSITIVE_NAMES)
def test_sensitive_field_names(name: str) -> None:
    assert is_sensitive_field_name(name)


@pytest.mark.parametrize("name", HARMLESS_NAMES)
def test_harmless_field_names(name: str) -> None:
    assert not is_sensitive_field_name(name)


# --- filter_form_fields: the three shapes -----------------------------------------------------


@pytest.mark.parametrize("name", SENSITIVE_NAMES)
def test_sensitive_names_are_dropped_in_every_shape(name: str) -> None:
    assert filter_form_fields(["message", name, "subject"]) == ["message", "subject"]
    assert filter_form_fields(
        [{"name": "message", "value": "hi"}, {"name": name, "value": "x"}]
    ) == [{"name": "message", "value": "hi"}]
    assert filter_form_fields({"message": "hi", name: "x"}) == {"message": "hi"}


@pytest.mark.parametrize("name", HARMLESS_NAMES)
def test_harmless_names_are_kept_in_every_shape(name: str) -> None:
    assert filter_form_fields([name]) == [name]
    assert filter_form_fields([{"name": name, "value": "hello"}]) == [
        {"name": name, "value": "hello"}
    ]
    assert filter_form_fields({name: "hello"}) == {name: "hello"}


@pytest.mark.parametrize(
    "value",
    ["jane@example.com", "4111 1111 1111 1111", "4242424242424242", 4111111111111111,
     ["a", "jane@example.com"], {"nested": "4111-1111-1111-1111"}],
)  # fmt: skip
def test_personal_values_are_dropped_whatever_the_name(value: object) -> None:
    assert filter_form_fields([{"name": "notes", "value": value}, {"name": "q", "value": "x"}]) == [
        {"name": "q", "value": "x"}
    ]
    assert filter_form_fields({"notes": value, "q": "x"}) == {"q": "x"}


def test_values_in_place_of_names_are_dropped() -> None:
    assert filter_form_fields(["jane@example.com", "4111111111111111", "plan"]) == ["plan"]
    assert filter_form_fields({"jane@example.com": "on", "plan": "pro"}) == {"plan": "pro"}


def test_harmless_values_are_kept() -> None:
    fields = {"plan": "pro", "seats": 12, "order": "4111111111111112", "agree": True, "note": None}
    assert filter_form_fields(fields) == fields


def test_field_objects_are_vetted_by_type_autocomplete_and_label() -> None:
    fields = [
        {"name": "f1", "type": "email", "value": "x"},
        {"name": "f2", "type": "password"},
        {"name": "f3", "type": "tel"},
        {"name": "f4", "autocomplete": "cc-number"},
        {"name": "f5", "label": "Your e-mail address"},
        {"name": "f6", "id": "user_phone"},
        {"name": "csrf", "type": "hidden", "value": "abc"},
        {"name": "f7", "type": "HIDDEN"},
        {"name": "plan", "type": "select", "label": "Plan", "value": "pro"},
    ]
    assert filter_form_fields(fields) == [
        {"name": "plan", "type": "select", "label": "Plan", "value": "pro"}
    ]


def test_list_entries_that_cannot_be_vetted_are_dropped() -> None:
    fields = ["plan", 4, None, ["nested"], {"value": "no name"}, {"name": 3}, {"name": "seats"}]
    assert filter_form_fields(fields) == ["plan", {"name": "seats"}]


def test_shape_and_order_are_kept_and_input_is_not_modified() -> None:
    fields = ["b", "email", "a", "c"]
    result = filter_form_fields(fields)
    assert result == ["b", "a", "c"]
    assert fields == ["b", "email", "a", "c"]
    as_dict = {"b": 1, "password": "x", "a": 2}
    assert list(filter_form_fields(as_dict)) == ["b", "a"]
    assert as_dict == {"b": 1, "password": "x", "a": 2}


@pytest.mark.parametrize("fields", ["email,name", 3, None, True, ("email",)])
def test_other_shapes_cannot_be_vetted(fields: object) -> None:
    assert filter_form_fields(fields) is None


def test_empty_shapes_stay_empty() -> None:
    assert filter_form_fields([]) == []
    assert filter_form_fields({}) == {}


def test_deeply_nested_values_do_not_exhaust_recursion() -> None:
    value: object = "jane@example.com"
    for _ in range(5000):
        value = [value]
    assert filter_form_fields({"notes": value}) == {}


# --- sanitize_form_submit ---------------------------------------------------------------------


def test_sanitize_form_submit_filters_fields() -> None:
    properties = {"formName": "signup", "fields": ["email", "company", "password"]}
    assert sanitize_form_submit(properties) == {"formName": "signup", "fields": ["company"]}
    assert properties["fields"] == ["email", "company", "password"]


def test_sanitize_form_submit_drops_fields_it_cannot_vet() -> None:
    assert sanitize_form_submit({"formName": "signup", "fields": "email=jane@example.com"}) == {
        "formName": "signup"
    }


def test_sanitize_form_submit_without_fields_is_identity() -> None:
    properties = {"formName": "signup"}
    assert sanitize_form_submit(properties) is properties
