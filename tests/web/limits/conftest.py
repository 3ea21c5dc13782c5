"""Fixtures of the rate-limit tests."""
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.limits import RedisServer


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()

