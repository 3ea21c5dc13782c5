"""The operator's CLI: `flask db`, `flask sites`, `flask keys`, `flask data` (README, "CLI")."""
from flask import Flask

from app.cli.data import data_cli
from app.cli.db import db_cli, upgrade_schema
from app.cli.keys import keys_cli
from app.cli.sites import sites_cli

__all__ = ["init_app", "upgrade_schema"]


def init_app(app: Flask) -> None:
    for group in (db_cli, sites_cli, keys_cli, data_cli):
        app.cli.add_command(group)
