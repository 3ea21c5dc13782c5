"""`flask data ...`: retention (prune what is older than you keep) and erasure (one person)."""
import click
from flask import current_app
from flask.cli import AppGroup

from app.cli.common import connected, fail
from app.cli.sites import site_or_fail
from app.retention import erase, prune
from app.storage import partitions

data_cli = AppGroup("data", help="Stored data: retention and erasure.")


def report(deleted: dict[str, int]) -> None:
    for table, count in deleted.items():
        click.echo(f"{table}\t{count}")


@data_cli.command("prune")
@click.option("--older-than", "months", type=click.IntRange(min=1), required=True,
              metavar="MONTHS",
              help="Keep the current calendar month (UTC) and this many before it.")
@connected
def data_prune(months: int) -> None:
    """Delete events, visits (by when they ended: one across the cutoff keeps its part after
    it), server events, crawl hits and tallies from before the first day of the month MONTHS
    months ago, and batch ids older than EGIS_IDEMPOTENCY_DAYS (a resend older than that is
    stored again), and the storage-free salts and visitor states 48 hours after their day
    began; and, whatever MONTHS, the OAuth rows past all use (used or expired codes a day on,
    grants 30 days after they ended with their tokens, clients without a grant for 30 days;
    nothing of a live grant). On PostgreSQL whole months of
    events go with their partition, and the coming months' partitions are created. Safe
    while ingest runs: rows go in small transactions. Prints the rows deleted per table."""
    days = int(current_app.config["IDEMPOTENCY_DAYS"])
    cutoffs, deleted = prune.prune_now(months, days)
    partitions.ensure()  # the coming months', while we are at it
    click.echo(f"Deleted data from before {cutoffs.data_before:%Y-%m-%d} and batch ids "
               f"received before {cutoffs.batch_ids_before:%Y-%m-%d %H:%M} UTC "
               f"({days} days).")
    report(deleted)


@data_cli.command("erase")
@click.argument("domain")
@click.option("--user-id", help="The id the site gave identify() / identifiedUserId.")
@click.option("--anonymous-id", help="The tracker's anonymous id (one browser).")
@connected
def data_erase(domain: str, user_id: str | None, anonymous_id: str | None) -> None:
    """Delete everything stored about one person of DOMAIN, for an erasure request.

    --user-id also erases the anonymous ids (browsers) that user was seen with. Their visits
    are derived again from the events left (a visit with none left goes), all in one
    transaction: interrupted, it erased nothing, and a rerun erases all. Crawl hits,
    tallies and usage counters hold nothing about a person and are left. Prints the rows
    deleted per table.
    """
    if (user_id is None) == (anonymous_id is None):
        fail("give exactly one of --user-id ID or --anonymous-id ID.")
    site = site_or_fail(domain)
    if user_id is not None:
        browsers, deleted = erase.erase_user(site.id, user_id)
        click.echo(f"Erased user id {user_id!r} of {site.domain} and the {len(browsers)} "
                   "anonymous id(s) it was seen with.")
    else:
        deleted = erase.erase_anonymous(site.id, anonymous_id)
        click.echo(f"Erased anonymous id {anonymous_id!r} of {site.domain}.")
    report(deleted)
