"""Apps whose merge timer never fires in a test: what a read, or the test, merges is all."""
import pytest

from tests.fixtures.rollups import NEVER


@pytest.fixture
def lazy_app(make_app):
    return make_app(ROLLUP_MERGE_SECONDS=NEVER)


@pytest.fixture
def lazy_client(lazy_app):
    return lazy_app.test_client()
