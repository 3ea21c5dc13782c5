"""app.revenue.money: active currencies, ISO 4217 exponents and exact minor-unit conversion."""

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.revenue.money import (
    MoneyError,
    active_currencies,
    currency_exponent,
    normalize_currency,
    to_major_units,
    to_minor_units,
)

INT64_MAX = 2**63 - 1

# ISO 4217 (list one) minor units of current currencies; every other one has 2.
ISO_ZERO_DECIMALS = {
    "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "VND", "VUV",
    "XAF", "XOF", "XPF",
}  # fmt: skip
ISO_THREE_DECIMALS = {"BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"}


@pytest.mark.parametrize(
    ("amount", "currency", "minor"),
    [
        ("19.99", "USD", 1999),
        ("500", "JPY", 500),
        ("1.234", "BHD", 1234),
        ("-5.00", "USD", -500),
        ("10", "USD", 1000),
        ("1E+2", "USD", 10000),
        ("1.500", "USD", 150),
        ("0.01", "EUR", 1),
        ("0", "USD", 0),
        ("-0.00", "USD", 0),
        ("0E-50", "JPY", 0),
        ("0E+50", "JPY", 0),
        ("1.000000000000000000000000000000000", "KWD", 1000),
        ("1000", "IQD", 1_000_000),
        ("92233720368547758.07", "USD", INT64_MAX),
        ("-92233720368547758.07", "USD", -INT64_MAX),
        ("9223372036854775807", "JPY", INT64_MAX),
    ],
)
def test_to_minor_units(amount: str, currency: str, minor: int) -> None:
    assert to_minor_units(Decimal(amount), currency) == minor


def test_to_minor_units_accepts_lower_case_currency_and_int_amount() -> None:
    assert to_minor_units(Decimal("19.99"), "usd") == 1999
    assert to_minor_units(7, "eur") == 700


@pytest.mark.parametrize(
    ("amount", "currency"),
    [("19.999", "USD"), ("1.5", "JPY"), ("0.1", "CLP"), ("1.2345", "BHD"), ("1E-999999", "USD")],
)
def test_more_decimals_than_the_currency_has(amount: str, currency: str) -> None:
    with pytest.raises(MoneyError, match=rf"decimal places than {currency} allows"):
        to_minor_units(Decimal(amount), currency.lower())


@pytest.mark.parametrize("amount", ["NaN", "-NaN", "sNaN", "Infinity", "-Infinity"])
def test_non_finite_amounts(amount: str) -> None:
    with pytest.raises(MoneyError, match="finite"):
        to_minor_units(Decimal(amount), "USD")


@pytest.mark.parametrize(
    ("amount", "currency"),
    [
        ("92233720368547758.08", "USD"),
        ("-92233720368547758.08", "USD"),
        ("9223372036854775808", "JPY"),
        ("1E+19", "JPY"),
        ("1E+999999", "USD"),
        ("-1E+999999", "USD"),
    ],
)
def test_amounts_outside_int64(amount: str, currency: str) -> None:
    with pytest.raises(MoneyError, match="too large"):
        to_minor_units(Decimal(amount), currency)


@pytest.mark.parametrize("amount", [19.99, 1.0, True, False, "19.99", None])
def test_non_decimal_amounts_are_a_type_error(amount: object) -> None:
    with pytest.raises(TypeError, match="Decimal"):
        to_minor_units(amount, "USD")  # type: ignore[arg-type]


def test_money_error_is_a_value_error() -> None:
    assert issubclass(MoneyError, ValueError)


@pytest.mark.parametrize(
    ("currency", "exponent"),
    [
        ("USD", 2),
        ("EUR", 2),
        ("JPY", 0),
        ("KRW", 0),
        ("BHD", 3),
        ("KWD", 3),
        ("JOD", 3),
        ("CLP", 0),
        ("ISK", 0),
        # CLDR (Babel) says 0 for cash use; ISO 4217 minor units win.
        ("HUF", 2),
        ("TWD", 2),
        ("IDR", 2),
        ("IQD", 3),
        ("RSD", 2),
        ("LAK", 2),
    ],
)
def test_currency_exponent(currency: str, exponent: int) -> None:
    assert currency_exponent(currency) == exponent
    assert currency_exponent(currency.lower()) == exponent


def test_every_active_currency_has_its_iso_4217_exponent() -> None:
    expected = {
        code: 0 if code in ISO_ZERO_DECIMALS else 3 if code in ISO_THREE_DECIMALS else 2
        for code in active_currencies()
    }
    assert {code: currency_exponent(code) for code in active_currencies()} == expected


def test_active_currencies_cover_the_usual_ones() -> None:
    assert {"USD", "EUR", "GBP", "JPY", "CHF", "CNY", "INR", "BRL", "XOF", "XAF"} <= (
        active_currencies()
    )
    assert all(len(code) == 3 and code.isupper() for code in active_currencies())


@pytest.mark.parametrize(("code", "normalized"), [("usd", "USD"), ("Eur", "EUR"), ("JPY", "JPY")])
def test_normalize_currency(code: str, normalized: str) -> None:
    assert normalize_currency(code) == normalized


@pytest.mark.parametrize(
    "code",
    [
        # withdrawn
        "DEM", "FRF", "ITL", "HRK", "VEF", "ZWL", "LTL",
        # precious metals, test and no-currency codes, SDR, funds
        "XAU", "XAG", "XPT", "XTS", "XXX", "XDR", "XSU", "XUA", "CLF", "USN", "BOV",
        # not codes at all
        "ABC", "", "US", "USDD", " USD", "usd ", "U$D", "€",
    ],
)  # fmt: skip
def test_inactive_or_unknown_currencies(code: str) -> None:
    with pytest.raises(MoneyError, match="not an active ISO 4217 currency"):
        normalize_currency(code)
    with pytest.raises(MoneyError):
        to_minor_units(Decimal("1"), code)
    with pytest.raises(MoneyError):
        currency_exponent(code)


def test_currency_error_names_the_code_and_stays_short() -> None:
    with pytest.raises(MoneyError, match="'XAU'"):
        normalize_currency("XAU")
    with pytest.raises(MoneyError) as caught:
        normalize_currency("X" * 10_000)
    assert len(str(caught.value)) < 100


def test_non_str_currency_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        normalize_currency(840)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("minor", "currency", "text"),
    [
        (1999, "USD", "19.99"),
        (1000, "USD", "10.00"),
        (0, "USD", "0.00"),
        (-500, "USD", "-5.00"),
        (500, "JPY", "500"),
        (1234, "bhd", "1.234"),
        (1, "KWD", "0.001"),
        (10**30 + 1, "USD", "10000000000000000000000000000.01"),
    ],
)
def test_to_major_units(minor: int, currency: str, text: str) -> None:
    major = to_major_units(minor, currency)
    assert str(major) == text
    assert major.as_tuple().exponent == -currency_exponent(currency)


@pytest.mark.parametrize("minor", [19.99, True, Decimal("1999"), "1999"])
def test_to_major_units_wants_an_int(minor: object) -> None:
    with pytest.raises(TypeError):
        to_major_units(minor, "USD")  # type: ignore[arg-type]


def test_to_major_units_rejects_inactive_currency() -> None:
    with pytest.raises(MoneyError):
        to_major_units(100, "XTS")


@st.composite
def amounts(draw: st.DrawFn) -> tuple[Decimal, str]:
    currency = draw(st.sampled_from(sorted(active_currencies())))
    exponent = currency_exponent(currency)
    limit = Decimal(INT64_MAX).scaleb(-exponent)
    amount = draw(
        st.decimals(
            min_value=-limit,
            max_value=limit,
            places=draw(st.integers(0, exponent)),
            allow_nan=False,
            allow_infinity=False,
        )
    )
    return amount, currency


@given(amounts())
def test_round_trip_through_minor_units(case: tuple[Decimal, str]) -> None:
    amount, currency = case
    assert to_major_units(to_minor_units(amount, currency), currency) == amount


@given(st.integers(-INT64_MAX, INT64_MAX), st.sampled_from(["USD", "JPY", "BHD", "CLP"]))
def test_round_trip_through_major_units(minor: int, currency: str) -> None:
    assert to_minor_units(to_major_units(minor, currency), currency) == minor
