"""Personal-data and money filters applied on the server before an event is stored.

Form fields (`form_submit` events, property `fields`) are vetted by NAME and by VALUE.

Names are split into tokens at camelCase humps, letter/digit boundaries and any separator
("cardNumber" -> card number, "cc-exp" -> cc exp, "user[E_Mail]" -> user e mail, "CVV2" ->
cvv 2), lower-cased. A name is sensitive when
  * a token is one of `_SENSITIVE_TOKENS` (short words that are only safe to match whole:
    "tel" must not match "telescope" or "hotel", "card" not "cardinal", "ssn" not "classname"),
  * a token contains one of `_SENSITIVE_STEMS` (long words safe to find inside a token:
    "useremail", "newpassword", "cardnumber", "telephone", "csrftoken"), or
  * two adjacent tokens form one of `_SENSITIVE_PAIRS` ("social security", "security code").
Values are sensitive when any string or integer in them looks like an e-mail address or a card
number (13-19 digits passing Luhn). In a {"name": ..., "value": ...} entry, "id", "label",
"type" and "autocomplete" are vetted like the name (type="email", autocomplete="cc-number"), and
hidden inputs are dropped as the tracker does. Entries that cannot be vetted are dropped, and so
is a `fields` property that is neither a list nor a dict.
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

import orjson

__all__ = [
    "EMAIL_IN_ID",
    "EMAIL_IN_ID_PATTERN",
    "MONEY_KEYS",
    "filter_form_fields",
    "is_sensitive_field_name",
    "looks_like_card_number",
    "looks_like_email",
    "luhn_valid",
    "may_hold_email",
    "sanitize_form_submit",
    "strip_money",
]

MONEY_KEYS = frozenset({"amount", "revenue", "revenue_cents", "currency"})
# How a money key appears in orjson's compact output, lowered, wherever it is: `"amount":`.
_MONEY_KEY_TEXT = re.compile(
    b'"(?:' + b"|".join(re.escape(key.encode()) for key in sorted(MONEY_KEYS)) + b')":')


def strip_money(value: Any) -> Any:
    """`value` without money keys (any case) at any depth: in every object, those within lists
    too. The same object comes back when there are none; the input is never modified.

    Runs for every stored event, so the question "is there one anywhere?" is asked of the JSON
    text, in C: orjson, bytes.lower() and one regular expression (bench/README.md, "Money keys
    at every depth": 0.1-2 µs more than the top-level check on the tracker's properties, where a
    walk in Python over the objects costs 2-10 times as much wherever they nest), and the value
    is walked only when the text has one. A key's text cannot hide a money key:
    orjson writes every key whole between quotes, never escaping a letter, and lowering the
    bytes lowers every spelling that str.lower() makes a money key of (no character beyond
    ASCII lowers to one of their letters: tests/ingest/test_privacy.py). A match that is no key
    (a key `x"amount` reads `"x\\"amount":`) only costs the walk.
    """
    try:
        text = orjson.dumps(value).lower()
    except orjson.JSONEncodeError:  # a non-str key (JSON never has one) or a non-JSON value
        return _without_money(value)
    return value if _MONEY_KEY_TEXT.search(text) is None else _without_money(value)


def _without_money(value: Any) -> Any:
    # Recursive: every value stored has at most 64 levels (app.web.schema.JSONObject checks it).
    if isinstance(value, dict):
        return {key: _without_money(item) for key, item in value.items()
                if not _is_money_key(key)}
    if isinstance(value, list):
        return [_without_money(item) for item in value]
    return value


def _is_money_key(key: object) -> bool:
    return isinstance(key, str) and key.lower() in MONEY_KEYS


# --- ids that may hold an e-mail address ------------------------------------------------------

# An @ as it is, percent-encoded (%40), full-width (U+FF20) or small (U+FE6B): the spellings a
# URL decoder, Unicode normalization (NFKC) or a reader turns back into an address. An id
# chosen by a client (a user id, an anonymous id) holding one is refused as an e-mail address.
# A regular expression both Python and JSON Schema read the same way: the OpenAPI document
# carries it (app.web.schema.OpaqueId).
EMAIL_IN_ID_PATTERN = "@|%40|\uff20|\ufe6b"
EMAIL_IN_ID = ("Must be an opaque id, not an e-mail address (no @, %40, \uff20 or \ufe6b "
               "in it).")
_EMAIL_IN_ID = re.compile(EMAIL_IN_ID_PATTERN)


def may_hold_email(identifier: str) -> bool:
    """Whether an id holds an @ in any of its spellings (EMAIL_IN_ID_PATTERN)."""
    return _EMAIL_IN_ID.search(identifier) is not None


# --- e-mail addresses and card numbers ------------------------------------------------------

_MAX_EMAIL_LENGTH = 254
# local@domain.tld: no spaces, one @, dot-separated domain labels, a 2+ letter (or punycode) TLD.
# Labels exclude dots, so the pattern cannot backtrack catastrophically.
_EMAIL = re.compile(r"[^@\s]+@(?:[^@\s.]+\.)+(?:[^\W\d_]{2,63}|xn--[a-z0-9-]{1,59})", re.IGNORECASE)
_CARD_SEPARATORS = re.compile(r"[\s-]+")
_MAX_CARD_TEXT_LENGTH = 40


def looks_like_email(value: str) -> bool:
    """True for a plausible e-mail address (surrounding whitespace ignored)."""
    if not isinstance(value, str) or len(value) > _MAX_EMAIL_LENGTH + 2:
        return False
    return _EMAIL.fullmatch(value.strip()) is not None


def luhn_valid(digits: str) -> bool:
    """Luhn checksum of a string of ASCII digits; False for anything else."""
    if not (isinstance(digits, str) and digits.isascii() and digits.isdigit()):
        return False
    total = 0
    for position, char in enumerate(reversed(digits)):
        digit = ord(char) - 48
        if position % 2:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def looks_like_card_number(value: str) -> bool:
    """True for 13-19 digits (spaces and dashes ignored) that pass Luhn; ints are checked too."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() > 64:  # more than 19 digits, and str() of huge ints is costly
            return False
        value = str(abs(value))
    if not isinstance(value, str) or len(value) > _MAX_CARD_TEXT_LENGTH:
        return False
    digits = _CARD_SEPARATORS.sub("", value)
    return 13 <= len(digits) <= 19 and luhn_valid(digits)


def _looks_personal(value: object) -> bool:
    return looks_like_email(value) or looks_like_card_number(value)


def _contains_personal_value(value: object) -> bool:
    """Whether any string or int inside `value` (keys included) is an e-mail or card number."""
    # Iterative, so that deeply nested JSON cannot exhaust the recursion limit.
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)
        elif _looks_personal(item):
            return True
    return False


# --- field names ------------------------------------------------------------------------------

# Matched against whole tokens only: short words that also occur inside harmless words.
_SENSITIVE_TOKENS = frozenset(
    {
        # passwords and one-time secrets
        "pass", "passe", "kennwort", "contrasena", "contraseña", "secret", "otp", "totp", "pin",
        # e-mail
        "mail", "courriel", "correo",
        # phone
        "tel", "telno", "telnr", "telnum", "telnumber", "mobile", "mobileno", "mobilenr",
        "mobilenumber", "teléfono",
        # payment card
        "card", "cc", "csc", "cvn",
        # national identifiers
        "ssn",
    }
)  # fmt: skip
# Matched anywhere inside a token: distinctive enough to find inside compound names.
_SENSITIVE_STEMS = (
    "passw",  # password, passwort, passwd, newpassword
    "pwd",
    "passphrase",
    "email",
    "phone",  # telephone, cellphone, phonenumber
    "telefon",
    "creditcard",
    "debitcard",
    "cardnumber",
    "cardnum",
    "cardno",
    "cardholder",
    "ccnum",
    "cvv",
    "cvc",
    "iban",
    "socialsecurity",
    "token",  # csrftoken, accesstoken
)
_SENSITIVE_PAIRS = frozenset(
    {("social", "security"), ("security", "code"), ("one", "time")}  # one-time-code: an OTP
)

_CAMEL_OR_DIGIT_BOUNDARY = re.compile(
    r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=\D)(?=\d)|(?<=\d)(?=\D)"
)
_NAME_SEPARATORS = re.compile(r"[\W_]+")


# Stems contain no space, so searching the space-joined tokens never matches across two tokens.
_SENSITIVE_STEM = re.compile("|".join(_SENSITIVE_STEMS))


def _name_tokens(name: str) -> list[str]:
    spaced = _CAMEL_OR_DIGIT_BOUNDARY.sub(" ", name).lower()
    return [token for token in _NAME_SEPARATORS.split(spaced) if token]


def is_sensitive_field_name(name: str) -> bool:
    """Whether a form field name says password, e-mail, phone, card, IBAN, SSN or token."""
    tokens = _name_tokens(name)
    if not _SENSITIVE_TOKENS.isdisjoint(tokens):
        return True
    if _SENSITIVE_STEM.search(" ".join(tokens)):
        return True
    return any(pair in _SENSITIVE_PAIRS for pair in pairwise(tokens))


# --- form_submit fields -----------------------------------------------------------------------

# Keys of a {"name": ..., "value": ...} entry that describe the field rather than hold its value.
_DESCRIPTIVE_KEYS = ("name", "id", "label", "type", "autocomplete")
# The tracker never sends hidden inputs: they carry CSRF tokens and other state, not user input.
_HIDDEN_TYPE = "hidden"

FormFields = list[Any] | dict[str, Any]


def filter_form_fields(fields: object) -> FormFields | None:
    """Drop the entries of a form_submit `fields` property that may hold personal data.

    Accepted shapes, kept as sent: a list of field names, a list of {"name", "value", ...}
    objects, or a dict of name -> value. Anything else cannot be vetted and gives None, meaning
    "drop the property". Inside a list, entries that are neither a name nor an object with a
    string "name" are dropped.
    """
    if isinstance(fields, list):
        return [entry for entry in fields if _keep_list_entry(entry)]
    if isinstance(fields, dict):
        return {name: value for name, value in fields.items() if _keep_named_value(name, value)}
    return None


def _keep_list_entry(entry: object) -> bool:
    if isinstance(entry, str):
        # A bare name; a client that sends values in place of names is caught by the value test.
        return not (is_sensitive_field_name(entry) or _looks_personal(entry))
    if isinstance(entry, dict):
        return _keep_field_object(entry)
    return False


def _keep_named_value(name: object, value: object) -> bool:
    if not isinstance(name, str) or is_sensitive_field_name(name) or _looks_personal(name):
        return False
    return not _contains_personal_value(value)


def _keep_field_object(entry: dict[str, Any]) -> bool:
    if not isinstance(entry.get("name"), str):
        return False
    field_type = entry.get("type")
    if isinstance(field_type, str) and field_type.lower() == _HIDDEN_TYPE:
        return False
    for key in _DESCRIPTIVE_KEYS:
        described = entry.get(key)
        if isinstance(described, str) and is_sensitive_field_name(described):
            return False
    return not _contains_personal_value(entry)


def sanitize_form_submit(properties: dict[str, Any]) -> dict[str, Any]:
    """Apply `filter_form_fields` to `properties["fields"]`; the input is never modified."""
    if "fields" not in properties:
        return properties
    filtered = filter_form_fields(properties["fields"])
    sanitized = {key: value for key, value in properties.items() if key != "fields"}
    if filtered is not None:
        sanitized["fields"] = filtered
    return sanitized
