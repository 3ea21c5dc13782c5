"""Fixtures shared by the analytics tests: the shop of tests/fixtures/shop.py,
its traffic ingested over HTTP."""
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from models.site import utcnow
from tests.fixtures.helpers import tool_result
from tests.fixtures.shop import DOMAIN, ingest


@pytest.fixture
def shop(app, make_site) -> Any:
    """The shop with its traffic; its keys, `period` (`from`, `to`: yesterday and today) and
    `call(tool, arguments)`, the MCP result."""
    site_keys = make_site(DOMAIN, "standard")
    client = app.test_client()
    ingest(client, site_keys)
    today = utcnow().date()
    site_keys.period = {"from": (today - timedelta(days=1)).isoformat(),
                        "to": today.isoformat()}
    site_keys.call = lambda name, arguments: tool_result(
        client, site_keys.server_headers(), name, arguments)
    return site_keys


@pytest.fixture
def ask(shop) -> Callable[..., dict[str, Any]]:
    """Call a tool on the shop over its period; its structured result."""

    def call(name: str, **arguments: Any) -> dict[str, Any]:
        result = shop.call(name, {**shop.period, **arguments})
        assert result["isError"] is False, result
        return result["structuredContent"]

    return call
