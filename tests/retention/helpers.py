"""What the retention and erasure tests share: rows of every kind added by hand, the CLI run,
its per-table lines."""
import uuid
from datetime import datetime

from models import Batch, CrawlHit, Event, IngestTally, ServerEvent, Usage, Visit
from tests.tracking.helpers import db

# What `flask data prune` prints a line for, in its order: the OAuth tables last (app.oauth.expiry).
OAUTH_TABLES = ("oauth_code", "oauth_token", "oauth_grant", "oauth_client", "connect_code")
TABLES = ("event", "visit", "visit_page", "event_slot", "server_event", "crawl_hit",
          "ingest_tally", "usage", "batch", "visitor_salt", "visitor_state", "idempotency_key",
          *OAUTH_TABLES)


def add_event(site_id: int, occurred_at: datetime, **fields) -> None:
    Event.create(**{"site_id": site_id, "type": "pageview", "page_url": "https://std.example/",
                    "path": "/", "occurred_at": occurred_at, "received_at": occurred_at, **fields})


def add_server_event(site_id: int, occurred_at: datetime, **fields) -> None:
    ServerEvent.create(uid=uuid.uuid4(), site_id=site_id, event_name="purchase",
                       occurred_at=occurred_at, received_at=occurred_at, **fields)


def add_crawl_hit(site_id: int, received_at: datetime) -> None:
    CrawlHit.create(site_id=site_id, path="/", user_agent="GPTBot", category="ai",
                    received_at=received_at)


def add_batch(site_id: int, received_at: datetime) -> str:
    key = f"batch-{uuid.uuid4().hex}"
    Batch.create(site_id=site_id, batch_key=key, event_count=1, received_at=received_at)
    return key


def counts(app) -> dict[str, int]:
    with db(app):
        models = (Event, ServerEvent, CrawlHit, IngestTally, Usage, Batch)
        return {model._meta.table_name: model.select().count() for model in models}


def run(app, *args: str):
    result = app.test_cli_runner().invoke(args=list(args))
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout.splitlines()


def table_lines(lines: list[str]) -> dict[str, int]:
    return {name: int(count) for name, count in (line.split("\t") for line in lines[1:])}


def visits_left(app) -> list[tuple]:
    with db(app):
        return list(Visit.select(Visit.site_id, Visit.session_id, Visit.visitor)
                    .order_by(Visit.site_id, Visit.session_id).tuples())
