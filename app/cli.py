"""The operator's CLI: `flask db upgrade`, `flask sites ...`, `flask keys ...`."""
import os
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any

import click
from flask import Flask, current_app
from flask.cli import AppGroup
from peewee import IntegrityError
from playhouse.migrations import Runner

from app import keys
from app.db import is_postgres
from models import ApiKey, Site, database
from models.api_key import KINDS
from models.site import PLANS

MIGRATIONS_DIR = os.path.join(os.path.dirname(__file__), "migrations")

db_cli = AppGroup("db", help="Database schema.")
sites_cli = AppGroup("sites", help="Sites (one per tracked domain).")
keys_cli = AppGroup("keys", help="API keys of a site.")


def fail(message: str) -> None:
    click.echo(f"Error: {message}", err=True)
    sys.exit(1)


def connected(command: Callable[..., Any]) -> Callable[..., Any]:
    @wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with database.connection_context():
            return command(*args, **kwargs)

    return wrapper


MIGRATION_LOCK_ID = 0x6567_6973  # "egis": one upgrade at a time on a PostgreSQL server


def upgrade_schema() -> list[str]:
    """Apply pending migrations; returns their names (empty when up to date)."""
    with database.connection_context():
        if not is_postgres():
            return Runner(database.obj, directory=MIGRATIONS_DIR).up()
        # Two instances deploying at once must not both apply the same migration.
        database.execute_sql("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK_ID,))
        try:
            return Runner(database.obj, directory=MIGRATIONS_DIR).up()
        finally:
            database.execute_sql("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_ID,))


def site_or_fail(domain: str) -> Site:
    site = Site.get_or_none(Site.domain == normalize_domain(domain))
    if site is None:
        fail(f"no site with domain {domain!r}.")
    return site


def normalize_domain(domain: str) -> str:
    return domain.strip().lower().rstrip(".")


def describe(site: Site) -> str:
    return f"{site.domain}\tplan={site.plan}\tmonthly_quota={site.quota}"


@db_cli.command("upgrade")
def db_upgrade() -> None:
    """Create or upgrade the schema (idempotent)."""
    applied = upgrade_schema()
    click.echo("Applied: " + ", ".join(applied) if applied else "Schema is up to date.")


plan_option = click.option("--plan", type=click.Choice(PLANS), help="free, standard or pro.")
quota_option = click.option("--monthly-quota", type=click.IntRange(min=0),
                            help="Events a calendar month (UTC); default: the plan's.")


@sites_cli.command("create")
@click.argument("domain")
@plan_option
@quota_option
@connected
def sites_create(domain: str, plan: str | None, monthly_quota: int | None) -> None:
    """Create a site for DOMAIN."""
    domain = normalize_domain(domain)
    if not domain or "/" in domain or " " in domain:
        fail(f"{domain!r} is not a domain name (e.g. example.com).")
    try:
        site = Site.create(domain=domain, plan=plan or "free", monthly_quota=monthly_quota)
    except IntegrityError:
        fail(f"a site with domain {domain!r} already exists.")
    click.echo(describe(site))


@sites_cli.command("update")
@click.argument("domain")
@plan_option
@quota_option
@connected
def sites_update(domain: str, plan: str | None, monthly_quota: int | None) -> None:
    """Change a site's plan or quota."""
    site = site_or_fail(domain)
    if plan is not None:
        site.plan = plan
    if monthly_quota is not None:
        site.monthly_quota = monthly_quota
    site.save()
    click.echo(describe(site))


@sites_cli.command("list")
@connected
def sites_list() -> None:
    """List all sites."""
    for site in Site.select().order_by(Site.domain):
        click.echo(describe(site))


@keys_cli.command("create")
@click.argument("domain")
@click.option("--kind", type=click.Choice(KINDS), required=True)
@connected
def keys_create(domain: str, kind: str) -> None:
    """Create a key; the key is printed once, alone, on the last line."""
    site = site_or_fail(domain)
    prefix = current_app.config["WRITE_KEY_PREFIX" if kind == "write" else "SERVER_KEY_PREFIX"]
    issued = keys.issue(site, kind, prefix)
    click.echo(f"Created {kind} key for {site.domain}; it is shown only now:")
    click.echo(issued.key)


@keys_cli.command("list")
@click.argument("domain")
@connected
def keys_list(domain: str) -> None:
    """List a site's keys (never the whole key)."""
    site = site_or_fail(domain)
    for record in site.keys.order_by(ApiKey.created_at, ApiKey.id):
        state = f"revoked {record.revoked_at:%Y-%m-%d %H:%M}" if record.revoked_at else "active"
        click.echo(f"{record.hint}\t{record.kind}\t{state}\tcreated {record.created_at:%Y-%m-%d}")


@keys_cli.command("revoke")
@click.argument("key")
@connected
def keys_revoke(key: str) -> None:
    """Revoke KEY (within the key cache TTL it stops working in every worker)."""
    key = key.strip()
    record = keys.find(key)
    if record is None:
        fail("no such key.")
    if record.revoked_at is not None:
        click.echo(f"{record.hint} was already revoked on {record.revoked_at:%Y-%m-%d %H:%M}")
        return
    keys.revoke(key)
    click.echo(f"Revoked {record.hint}")


def init_app(app: Flask) -> None:
    for group in (db_cli, sites_cli, keys_cli):
        app.cli.add_command(group)
