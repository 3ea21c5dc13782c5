"""What every command group shares (app.cli.common): one-line failures and a database
connection around the command."""
import click
from flask import Flask

from app.cli.common import connected, fail
from models import database


def _runner(app: Flask, command: click.Command):
    app.cli.add_command(command)
    return app.test_cli_runner()


def test_fail_exits_1_with_one_error_line_and_nothing_on_stdout(app):
    @click.command("refuses")
    def refuses() -> None:
        fail("no such site: nope.example")

    result = _runner(app, refuses).invoke(args=["refuses"])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == "Error: no such site: nope.example\n"


def test_a_connected_command_runs_inside_a_connection_closed_after(app):
    seen: list[bool] = []

    @click.command("counts")
    @connected
    def counts() -> None:
        seen.append(database.is_closed())
        click.echo(database.execute_sql("SELECT 40 + 2").fetchone()[0])

    result = _runner(app, counts).invoke(args=["counts"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "42\n"
    assert seen == [False]
    with app.app_context():
        assert database.is_closed()
