"""`flask sites ...`: one site per tracked domain, its plan, its monthly quota and its time zone."""
from difflib import get_close_matches
from zoneinfo import available_timezones

import click
import idna
from flask.cli import AppGroup
from peewee import IntegrityError

from app.cli.common import connected, fail
from models import Site
from models.site import PLAN_QUOTAS, PLANS

MAX_DOMAIN_LENGTH = 253

sites_cli = AppGroup("sites", help="Sites (one per tracked domain).")


def normalize_domain(domain: str) -> str:
    """The domain as stored and as browsers send it in Origin: lower case, IDNA A-labels
    (`bücher.example` -> `xn--bcher-kva.example`), no trailing dot. Exits with one line when
    `domain` is not a plain host name."""
    text = domain.strip().rstrip(".")
    example = "e.g. example.com"
    if "://" in text or "/" in text:
        fail(f"{domain!r} is not a domain name: give the host alone, without scheme or path "
             f"({example}).")
    if "*" in text:
        fail(f"{domain!r}: wildcards are not allowed; a site already covers its subdomains "
             f"({example} covers www.example.com).")
    host, colon, port = text.rpartition(":")
    if colon and port.isdigit():
        fail(f"{domain!r}: a domain has no port; give {host!r} (the Origin check ignores "
             f"ports).")
    try:
        normalized = idna.encode(text, uts46=True, std3_rules=True).decode("ascii")
    except idna.IDNAError:
        normalized = ""
    if not normalized or len(normalized) > MAX_DOMAIN_LENGTH:
        fail(f"{domain!r} is not a domain name: letters, digits and hyphens in dot-separated "
             f"labels, international names allowed ({example}).")
    return normalized


def site_or_fail(domain: str) -> Site:
    site = Site.get_or_none(Site.domain == normalize_domain(domain))
    if site is None:
        fail(f"no site with domain {domain!r}.")
    return site


def valid_timezone(name: str) -> str:
    """`name` if it is an IANA time zone that zoneinfo knows here, else exit with one line
    that suggests the closest name."""
    zones = available_timezones()
    if name in zones:
        return name
    close = get_close_matches(name, sorted(zones), n=1)
    hint = f" Did you mean {close[0]}?" if close else ""
    fail(f"unknown time zone {name!r}: give an IANA name such as Europe/Berlin or UTC.{hint}")


def describe(site: Site) -> str:
    zone = "" if site.timezone == "UTC" else f"\ttimezone={site.timezone}"
    return f"{site.domain}\tplan={site.plan}\tmonthly_quota={site.quota}{zone}"


plan_option = click.option(
    "--plan", type=click.Choice(PLANS),
    help="free, standard or pro. Sets the plan's quota too: a custom quota is dropped unless "
         "--monthly-quota is given in the same command.")
quota_option = click.option(
    "--monthly-quota", type=click.IntRange(min=0),
    help="Events a calendar month (UTC), instead of the plan's; kept until the next --plan.")
timezone_option = click.option(
    "--timezone", help="IANA time zone (Europe/Berlin) of the agent tools' days; default UTC.")


@sites_cli.command("create")
@click.argument("domain")
@plan_option
@quota_option
@timezone_option
@connected
def sites_create(domain: str, plan: str | None, monthly_quota: int | None,
                 timezone: str | None) -> None:
    """Create a site for DOMAIN (a host name: no scheme, port or wildcard; IDNA allowed)."""
    domain = normalize_domain(domain)
    zone = valid_timezone(timezone) if timezone is not None else "UTC"
    try:
        site = Site.create(domain=domain, plan=plan or "free", monthly_quota=monthly_quota,
                           timezone=zone)
    except IntegrityError:
        fail(f"a site with domain {domain!r} already exists.")
    click.echo(describe(site))


@sites_cli.command("update")
@click.argument("domain")
@plan_option
@quota_option
@timezone_option
@connected
def sites_update(domain: str, plan: str | None, monthly_quota: int | None,
                 timezone: str | None) -> None:
    """Change a site's plan, quota or time zone.

    --plan always brings the plan's own quota (up or down alike), so a custom quota never
    outlives the plan it was agreed for; give --monthly-quota with it to keep or set one.
    """
    site = site_or_fail(domain)
    if timezone is not None:
        site.timezone = valid_timezone(timezone)
    dropped = None
    if plan is not None:
        if monthly_quota is None and site.monthly_quota is not None:
            dropped = site.monthly_quota
        site.plan = plan
        site.monthly_quota = None
    if monthly_quota is not None:
        site.monthly_quota = monthly_quota
    site.save()
    click.echo(describe(site))
    if dropped is not None:
        click.echo(f"Note: the custom quota {dropped} was replaced by the {plan} plan's "
                   f"{PLAN_QUOTAS[plan]}; add --monthly-quota to set one.", err=True)


@sites_cli.command("list")
@connected
def sites_list() -> None:
    """List all sites."""
    for site in Site.select().order_by(Site.domain):
        click.echo(describe(site))
