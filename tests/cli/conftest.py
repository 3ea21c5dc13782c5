"""Fixtures of the CLI tests."""
import pytest


@pytest.fixture
def cli(app):
    runner = app.test_cli_runner()

    def invoke(*args: str):
        return runner.invoke(args=list(args))

    return invoke

