"""A deployment for a whole test module: sites and keys in the test database, and the deployed
server in front of it (`launch_server(deploy_config=True)`). Started once per module (a server
costs ~3 s to start); the tables are emptied when the module is done."""
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from flask import Flask

from app import create_app
from app.storage.db import release_connections
from models import Batch, CrawlHit, Event, ServerEvent, Usage
from tests.conftest import (
    LiveServer,
    SiteKeys,
    create_site,
    launch_server,
    stop_server,
    truncate_all,
)
from tests.helpers import db

STORED = (Batch, Event, ServerEvent, CrawlHit, Usage)


@dataclass(frozen=True)
class Deployment:
    server: LiveServer
    app: Flask  # an app on the same database, for reading what was stored
    std: SiteKeys  # standard plan
    free: SiteKeys  # free plan

    @property
    def url(self) -> str:
        return self.server.url

    def stored(self) -> dict[str, int]:
        """Rows of what clients send (not sites, keys, or the tally of what was refused)."""
        with db(self.app):
            return {model._meta.table_name: model.select().count() for model in STORED}


@contextmanager
def deployment(database_url: str, log_dir: Path, env: dict[str, str] | None = None,
               workers: int = 2) -> Iterator[Deployment]:
    app = create_app({"DATABASE_URL": database_url})
    std = create_site(app, "std.example", "standard")
    free = create_site(app, "free.example", "free")
    server = launch_server(database_url, log_dir, workers, env, deploy_config=True)
    try:
        yield Deployment(server, app, std, free)
    finally:
        stop_server(server)
        truncate_all()
        release_connections()
