"""`flask keys ...`: a site's write, server and read keys, each printed whole once, at creation."""
import click
from flask import current_app
from flask.cli import AppGroup

from app.access import keys
from app.cli.common import connected, fail
from app.cli.sites import site_or_fail
from models import ApiKey
from models.api_key import KINDS

keys_cli = AppGroup("keys", help="API keys of a site.")


@keys_cli.command("create")
@click.argument("domain")
@click.option("--kind", type=click.Choice(KINDS), required=True)
@connected
def keys_create(domain: str, kind: str) -> None:
    """Create a key; the key is printed once, alone, on the last line."""
    site = site_or_fail(domain)
    issued = keys.issue(site, kind, keys.prefixes(current_app.config)[kind])
    click.echo(f"Created {kind} key for {site.domain}; it is shown only now:")
    click.echo(issued.key)


@keys_cli.command("list")
@click.argument("domain")
@connected
def keys_list(domain: str) -> None:
    """List a site's keys: id, hint, kind, state, creation day (never the whole key)."""
    site = site_or_fail(domain)
    for record in site.keys.order_by(ApiKey.created_at, ApiKey.id):
        state = f"revoked {record.revoked_at:%Y-%m-%d %H:%M}" if record.revoked_at else "active"
        click.echo(f"{record.id}\t{record.hint}\t{record.kind}\t{state}"
                   f"\tcreated {record.created_at:%Y-%m-%d}")


@keys_cli.command("revoke")
@click.argument("reference", metavar="KEY|ID")
@connected
def keys_revoke(reference: str) -> None:
    """Revoke a key, named by the whole key, or by the id or the hint that `keys list` shows.

    Within the key cache TTL (EGIS_KEY_CACHE_SECONDS) it stops working in every worker.
    """
    found = keys.find_by_reference(reference)
    if not found:
        fail("no such key: give the whole key, or an id or a hint that "
             "`flask keys list DOMAIN` shows.")
    if len(found) > 1:
        ids = ", ".join(str(record.id) for record in found)
        fail(f"{len(found)} keys have the hint {found[0].hint}: revoke one by its id ({ids}).")
    record = found[0]
    if record.revoked_at is not None:
        click.echo(f"{record.hint} was already revoked on {record.revoked_at:%Y-%m-%d %H:%M}")
        return
    keys.revoke_record(record)
    click.echo(f"Revoked {record.hint} (id {record.id}, {record.kind} key of "
               f"{record.site.domain})")
