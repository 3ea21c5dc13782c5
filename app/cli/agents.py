"""`flask agents ...`: agents connected by OAuth (app.oauth). `connect` prints a one-time connect
code for the consent page; `list` shows a site's grants (never a token); `revoke` ends one at
once."""
import click
from flask.cli import AppGroup

from app.cli.common import connected, fail
from app.cli.sites import site_or_fail
from app.oauth import connect_codes, grants, redirects
from models import OAuthGrant

agents_cli = AppGroup("agents", help="Agents connected by OAuth (Claude, ChatGPT, ...).")


@agents_cli.command("connect")
@click.argument("domain")
@connected
def agents_connect(domain: str) -> None:
    """Make a one-time connect code for DOMAIN; it is printed alone on the last line."""
    site = site_or_fail(domain)
    code = connect_codes.issue(site)
    click.echo(f"Connect code for {site.domain}: type it into egis's consent page when your "
               "agent's app asks; it works once, within 15 minutes:")
    click.echo(code)


@agents_cli.command("list")
@click.argument("domain")
@connected
def agents_list(domain: str) -> None:
    """List DOMAIN's connected agents: grant id, client, redirect host, created, last used."""
    site = site_or_fail(domain)
    found = grants.active_grants(site)
    if not found:
        click.echo(f"No agent is connected to {site.domain}.")
    for grant in found:
        last = f"{grant.last_used_at:%Y-%m-%d %H:%M}" if grant.last_used_at else "never"
        click.echo(f"{grant.id}\t{grant.client.client_name or grant.client.client_id}"
                   f"\t{redirects.destination(grant.redirect_uri)}"
                   f"\tcreated {grant.created_at:%Y-%m-%d %H:%M}\tlast used {last}")


@agents_cli.command("revoke")
@click.argument("grant_id", type=int)
@connected
def agents_revoke(grant_id: int) -> None:
    """End the grant GRANT_ID (from `flask agents list`) at once: its tokens stop working."""
    grant = OAuthGrant.get_or_none(OAuthGrant.id == grant_id)
    if grant is None:
        fail(f"no such grant: {grant_id} (see `flask agents list DOMAIN`).")
    if not grants.revoke(grant_id):
        click.echo(f"Grant {grant_id} was already revoked on {grant.revoked_at:%Y-%m-%d %H:%M}.")
        return
    click.echo(f"Revoked grant {grant_id} ({grant.client.client_name or grant.client.client_id} "
               f"on {grant.site.domain}): its tokens no longer work.")
