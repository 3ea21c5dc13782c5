"""What a worker keeps of what it does not use, checked in a fresh interpreter.

A worker's memory is mostly what it imports (bench/README.md, "Memory per worker"): dnspython only
when crawler verification is on, none of Babel's global CLDR data once the currency table
is built from it, and the OAuth machinery (Authlib, the consent page) only on the first OAuth
request.
"""
import pytest

from tests.fixtures.helpers import in_fresh_interpreter

FRESH_WORKER = """
import sys
from decimal import Decimal

import babel.core
import orjson

from app import create_app
from app.revenue.money import to_minor_units

app = create_app({"DATABASE_URL": "sqlite:///:memory:",
                  "VERIFY_CRAWLERS": sys.argv[1] == "on"})
oauth_with_app = sorted(name for name in sys.modules
                        if name.startswith(("authlib", "joserfc", "app.oauth.server",
                                            "app.oauth.consent", "app.oauth.pages")))
app.test_client().get("/.well-known/oauth-authorization-server")
oauth_after_discovery = "authlib" in sys.modules
app.test_client().post("/oauth/token", data={"grant_type": "refresh_token"})
print(orjson.dumps({
    "oauth_with_app": oauth_with_app, "oauth_after_discovery": oauth_after_discovery,
    "oauth_after_token": "authlib" in sys.modules,
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


def test_oauth_is_loaded_by_the_first_request_that_needs_it():
    worker = fresh_worker(verify_crawlers=False)
    assert worker["oauth_with_app"] == []
    assert worker["oauth_after_discovery"] is False
    assert worker["oauth_after_token"] is True
