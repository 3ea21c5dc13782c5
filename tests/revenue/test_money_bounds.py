"""The bounds /api/openapi.json declares for `amount` and `revenue_cents` are the ones the service
enforces: read from the served document, the largest declared value either way is stored, and
the next value one of the currency's minor units beyond it is refused, by the document's own
schema and by the service alike (schemathesis's ST202 had found an amount the document called
valid refused: tests/system/test_contract.py)."""
import json
from decimal import Decimal
from typing import Any

import jsonschema_rs
import pytest

from app.revenue.money import MAX_AMOUNT, active_currencies, currency_exponent, to_minor_units
from models import ServerEvent
from tests.fixtures.helpers import post_json, rows

PATH = "/api/server/events"
INT64_MAX = 2**63 - 1


@pytest.fixture
def document(client) -> dict[str, Any]:
    return client.get("/api/openapi.json").get_json()


def declared(document: dict[str, Any], field: str) -> tuple[int, int]:
    schema = document["components"]["schemas"]["ServerEvent"]["properties"][field]
    return schema["minimum"], schema["maximum"]


def documented_valid(document: dict[str, Any], body: str) -> bool:
    """Whether the served document's ServerEvent schema takes `body`, its numbers read exactly
    (as the service reads them: 1000000000000000.01 is not the double 10^15)."""
    validator = jsonschema_rs.validator_for({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": "#/components/schemas/ServerEvent", "components": document["components"]})
    return validator.is_valid(json.loads(body, parse_float=Decimal))


def send(client, site, field: str, number: str, currency: str) -> Any:
    body = (f'{{"eventName": "purchase", "{field}": {number}, "currency": "{currency}", '
            f'"orderId": "{field}-{number}-{currency}"}}')
    return body, post_json(client, PATH, body, site.server_headers())


def stored_minor(app, field: str, number: str, currency: str) -> list[int]:
    order = f"{field}-{number}-{currency}"
    return [row.amount_minor for row in rows(app, ServerEvent) if row.order_id == order]


def one_unit_beyond(bound: int, exponent: int) -> str:
    """`bound` moved one minor unit away from zero, as exact JSON text."""
    step = Decimal(1).scaleb(-exponent)
    return str(Decimal(bound) + step.copy_sign(Decimal(bound)))


def test_every_active_currency_holds_the_largest_amount_in_64_bit_minor_units():
    for currency in active_currencies():
        assert to_minor_units(MAX_AMOUNT, currency) == MAX_AMOUNT * 10 ** currency_exponent(
            currency) <= INT64_MAX


@pytest.mark.parametrize("currency", ["JPY", "usd", "EUR", "BHD"])
def test_the_declared_amount_bounds_are_the_enforced_ones(client, app, std_site, document,
                                                          currency):
    lowest, highest = declared(document, "amount")
    assert (lowest, highest) == (-MAX_AMOUNT, MAX_AMOUNT)
    exponent = currency_exponent(currency)
    for bound in (lowest, highest):
        body, answer = send(client, std_site, "amount", str(bound), currency)
        assert documented_valid(document, body)
        assert answer.status_code == 200, answer.get_json()
        assert stored_minor(app, "amount", str(bound), currency) == [bound * 10**exponent]

        beyond = one_unit_beyond(bound, exponent)
        body, answer = send(client, std_site, "amount", beyond, currency)
        assert not documented_valid(document, body)
        assert answer.status_code == 400 and answer.get_json()["details"] == {
            "amount": [answer.get_json()["error"].removeprefix("amount: ")]}
        assert stored_minor(app, "amount", beyond, currency) == []


def test_a_double_just_past_the_largest_amount_is_refused_by_both(client, app, std_site,
                                                                   document):
    """What a client that writes doubles sends next: 1000000000000000.125 (a double's step at
    10^15 is 1/8), and the document's bound is a double exactly."""
    _, highest = declared(document, "amount")
    assert float(highest) == highest
    past = repr(float(highest) + 0.125)
    assert Decimal(past) > highest
    body, answer = send(client, std_site, "amount", past, "BHD")
    assert not documented_valid(document, body)
    assert answer.status_code == 400
    assert stored_minor(app, "amount", past, "BHD") == []


@pytest.mark.parametrize("currency", ["JPY", "USD"])
def test_the_declared_revenue_cents_bounds_are_the_enforced_ones(client, app, std_site, document,
                                                                 currency):
    lowest, highest = declared(document, "revenue_cents")
    assert (lowest, highest) == (-INT64_MAX, INT64_MAX)
    for bound in (lowest, highest):
        body, answer = send(client, std_site, "revenue_cents", str(bound), currency)
        assert documented_valid(document, body)
        assert answer.status_code == 200, answer.get_json()
        assert stored_minor(app, "revenue_cents", str(bound), currency) == [bound]

        beyond = one_unit_beyond(bound, 0)
        body, answer = send(client, std_site, "revenue_cents", beyond, currency)
        assert not documented_valid(document, body)
        assert answer.status_code == 400
        assert stored_minor(app, "revenue_cents", beyond, currency) == []
