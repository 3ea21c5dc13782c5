"""A deployment for a whole test module: sites and keys in the test database, and gunicorn with
deploy/gunicorn.conf.py in front of it. Started once per module (starting gunicorn costs ~3 s);
the tables are emptied when the module is done."""
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from flask import Flask

from app import create_app
from app.db import release_connections
from models import Batch, CrawlHit, Event, ServerEvent, Usage
from tests.conftest import (
    LiveServer,
    SiteKeys,
    create_site,
    launch_gunicorn,
    stop_gunicorn,
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
    server = launch_gunicorn(database_url, log_dir, workers, env, deploy_config=True)
    try:
        yield Deployment(server, app, std, free)
    finally:
        stop_gunicorn(server)
        truncate_all()
        release_connections()
