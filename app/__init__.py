"""egis: the Event and Goal Ingest Service. `create_app` is the only way to build it."""
from typing import Any

from flask import Flask
from werkzeug.middleware.proxy_fix import ProxyFix


def create_app(overrides: dict[str, Any] | None = None) -> Flask:
    """Build the app; `overrides` (tests) win over the environment."""
    from app import cli, config
    from app.access import auth
    from app.context import request as request_context
    from app.rollups import timer as rollups
    from app.runtime import request_log, tally
    from app.storage import db, dialect
    from app.tracking import quota, store, writer
    from app.web import bodies, errors, limits
    from blueprints import BLUEPRINTS

    app = Flask(__name__, instance_relative_config=True, static_folder=None)
    config.load(app, overrides)
    app.config["MAX_CONTENT_LENGTH"] = app.config["MAX_BODY_BYTES"]
    app.json.sort_keys = False
    app.wsgi_app = bodies.DrainUnreadBody(app.wsgi_app)
    hops = int(app.config["TRUSTED_PROXIES"])
    if hops > 0:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops)

    request_log.init_app(app)  # first: its clock starts before the other hooks run
    db.init_app(app)
    errors.init_app(app)
    auth.init_app(app)
    limits.init_app(app)
    cli.init_app(app)
    tally.init_app(app)
    rollups.init_app(app)
    request_context.init_app(app)
    app.extensions["egis_usage"] = quota.UsageCache(ttl=app.config["USAGE_CACHE_SECONDS"])
    if app.config["GROUP_COMMIT"] and dialect.current().groups_commits:
        app.extensions["egis_writer"] = writer.GroupWriter(store.store_group)
    for blueprint in BLUEPRINTS:
        app.register_blueprint(blueprint)
    return app
