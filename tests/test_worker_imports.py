"""What a worker keeps of what it does not use, checked in a fresh interpreter.

A worker's memory is mostly what it imports (bench/README.md, "Memory per worker"): dnspython only
when crawler verification is on, and none of Babel's global CLDR data once the currency table
is built from it.
"""
import pytest

from tests.helpers import in_fresh_interpreter

FRESH_WORKER = """
import sys
from decimal import Decimal

import babel.core
import orjson

from app import create_app
from app.revenue.money import to_minor_units

create_app({"DATABASE_URL": "sqlite:///:memory:", "VERIFY_CRAWLERS": sys.argv[1] == "on"})
print(orjson.dumps({
    "dnspython": "dns" in sys.modules,
    "babel_global_data": babel.core._global_data is not None,
    "minor_units": [to_minor_units(Decimal("19.99"), "usd"), to_minor_units(Decimal("500"), "JPY"),
                    to_minor_units(Decimal("1.234"), "BHD")],
}).decode())
"""


def fresh_worker(verify_crawlers: bool) -> dict:
    return in_fresh_interpreter(FRESH_WORKER, "on" if verify_crawlers else "off")


@pytest.mark.parametrize("verify_crawlers", [False, True])
def test_dnspython_is_loaded_only_to_verify_crawlers(verify_crawlers):
    assert fresh_worker(verify_crawlers)["dnspython"] is verify_crawlers


def test_babel_global_data_is_let_go_and_money_still_converts():
    worker = fresh_worker(verify_crawlers=False)
    assert worker["babel_global_data"] is False
    assert worker["minor_units"] == [1999, 500, 1234]
