"""Exact money for trusted revenue events.

Amounts arrive in major units as Decimal (parsed from JSON text, never float) and are stored as
integer minor units of an active ISO 4217 currency.

Active currencies: every currency that Babel's CLDR data lists as legal tender today in at least
one territory (`get_territory_currencies(..., tender=True)`), computed once at import. Funds,
precious metals and test codes (XAU, XTS, XXX, XDR, ...) are never tender, so they are refused;
withdrawn currencies (DEM, HRK, ...) are refused too.

Exponents: ISO 4217 minor units. Babel's `get_currency_precision` (CLDR "digits") agrees with
ISO 4217 except for a few currencies where CLDR records how they are used in practice (no coins
below the major unit); for those `_ISO_4217_EXPONENT_OVERRIDES` restores the ISO value, because
payment processors and accounting exports use ISO minor units.

Both tables are read from Babel once, at import, and kept as one small dict. Babel then holds
all of CLDR's global data (time zones, languages, scripts, ...: ~2.5 MiB in every worker) for
any later call; nothing else in egis calls it, so that cache is let go (bench/README.md,
"Memory per worker"). A later Babel call would simply load it again.
"""

from __future__ import annotations

from decimal import Decimal

import babel.core
from babel.numbers import get_currency_precision, get_territory_currencies

__all__ = [
    "MAX_AMOUNT",
    "MoneyError",
    "active_currencies",
    "currency_exponent",
    "normalize_currency",
    "to_major_units",
    "to_minor_units",
]

# Where CLDR's digits differ from the ISO 4217 minor unit (CLDR 0, ISO as below).
_ISO_4217_EXPONENT_OVERRIDES: dict[str, int] = {
    "AFN": 2,
    "ALL": 2,
    "IQD": 3,
    "IRR": 2,
    "KPW": 2,
    "LAK": 2,
    "LBP": 2,
    "MGA": 2,
    "MMK": 2,
    "RSD": 2,
    "SOS": 2,
    "SYP": 2,
    "YER": 2,
}

_INT64_MAX = 2**63 - 1
_INT64_MAX_DIGITS = len(str(_INT64_MAX))

# The largest amount in major units, either way, that the API takes (`amount`; revenue_cents is
# bounded by the 64-bit minor units alone). Minor units must fit a signed 64-bit integer, a
# bound that depends on the currency (92233720368547758.07 USD, 9223372036854775.807 BHD) and
# that JSON Schema could only state per currency, which generic clients and fuzzers (and
# double-based validators, for a bound like .07 past 2^53) do not follow: one bound for every
# currency, a whole number a double holds exactly, which the OpenAPI document states as it is
# enforced. 10^15 with the largest exponent of an active currency (3) is 10^18 minor units,
# within 2^63 - 1 (tests/revenue/test_money.py checks it for every active currency).
MAX_AMOUNT = 10**15


class MoneyError(ValueError):
    """An amount or currency that cannot be recorded exactly."""


def _load_exponents() -> dict[str, int]:
    """Each active currency's ISO 4217 exponent."""
    territories = babel.core.get_global("territory_currencies")
    active = {code for territory in territories for code in get_territory_currencies(territory)}
    return {code: _ISO_4217_EXPONENT_OVERRIDES.get(code, get_currency_precision(code))
            for code in active}


_EXPONENTS = _load_exponents()
_ACTIVE_CURRENCIES = frozenset(_EXPONENTS)
babel.core._global_data = None  # Babel's cache of CLDR's global data: see above


def active_currencies() -> frozenset[str]:
    """Codes accepted by `normalize_currency`."""
    return _ACTIVE_CURRENCIES


def normalize_currency(code: str) -> str:
    """Upper-case `code` and check that it is an active ISO 4217 currency."""
    if not isinstance(code, str):
        raise TypeError(f"currency must be a str, not {type(code).__name__}")
    normalized = code.upper()
    if normalized not in _ACTIVE_CURRENCIES:
        shown = code if len(code) <= 8 else code[:8] + "..."
        raise MoneyError(f"currency {shown!r} is not an active ISO 4217 currency code")
    return normalized


def currency_exponent(code: str) -> int:
    """ISO 4217 minor-unit exponent of an active currency (USD 2, JPY 0, BHD 3)."""
    return _EXPONENTS[normalize_currency(code)]


def _check_amount_type(amount: object) -> Decimal:
    # bool is an int subclass and float is inexact: both mean a caller bug, not bad input.
    if isinstance(amount, bool) or not isinstance(amount, (Decimal, int)):
        raise TypeError(f"amount must be a Decimal, not {type(amount).__name__}")
    return Decimal(amount)


def to_minor_units(amount: Decimal, currency: str) -> int:
    """Convert an amount in major units to integer minor units, exactly.

    USD 19.99 -> 1999, JPY 500 -> 500, BHD 1.234 -> 1234, USD -5 -> -500 (a refund).
    An int is accepted as an exact whole amount.
    """
    value = _check_amount_type(amount)
    code = normalize_currency(currency)
    exponent = _EXPONENTS[code]
    if not value.is_finite():
        raise MoneyError("amount must be a finite number")
    if value.is_zero():
        return 0
    # Checked on the exponent alone so that 1E+999999 never builds a huge integer.
    if value.adjusted() + exponent >= _INT64_MAX_DIGITS:
        raise MoneyError("amount is too large to record")
    minor = _scaled_coefficient(value, exponent)
    if minor is None:
        raise MoneyError(f"amount has more decimal places than {code} allows ({exponent})")
    if minor > _INT64_MAX:
        raise MoneyError("amount is too large to record")
    return -minor if value.is_signed() else minor


def _scaled_coefficient(value: Decimal, exponent: int) -> int | None:
    """|value| * 10**exponent if that is a whole number, else None.

    Works on the digit tuple rather than Decimal arithmetic, which would round to the context
    precision (28 digits) instead of failing.
    """
    _, digits, digits_exponent = value.as_tuple()
    significant = len(digits)
    while digits[significant - 1] == 0:
        significant -= 1
    shift = digits_exponent + (len(digits) - significant) + exponent
    if shift < 0:
        return None
    return int("".join(map(str, digits[:significant]))) * 10**shift


def to_major_units(minor: int, currency: str) -> Decimal:
    """Integer minor units back to major units, quantized to the currency's exponent."""
    if isinstance(minor, bool) or not isinstance(minor, int):
        raise TypeError(f"minor units must be an int, not {type(minor).__name__}")
    exponent = currency_exponent(currency)
    sign, digits, _ = Decimal(minor).as_tuple()
    # Built from the tuple so that no context precision or rounding applies.
    return Decimal((sign, digits, -exponent))
