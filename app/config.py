"""Configuration from the environment, in one place.

`EGIS_*` variables are read with Flask's `from_prefixed_env` (values are parsed as JSON when they
can be, so `EGIS_TRUSTED_PROXIES=1` is an int); `DATABASE_URL` is read as is.
"""
import os
from typing import Any

from flask import Flask

DEFAULTS: dict[str, Any] = {
    "KEY_PREFIX": "egis",
    "RATELIMIT_STORAGE_URI": "memory://",
    # Said explicitly: flask-limiter's one Limiter otherwise keeps the last app's setting, so an
    # app built with limits off would leave every later app in the process unlimited.
    "RATELIMIT_ENABLED": True,
    # Off: X-RateLimit-* on every response costs a storage read per request; the 429 handler
    # (app.web.errors) sets Retry-After itself.
    "RATELIMIT_HEADERS_ENABLED": False,
    "RATELIMIT_STRATEGY": "fixed-window",
    "RATE_LIMIT_KEY": "6000/minute",
    "RATE_LIMIT_IP": "600/minute",
    "RATE_LIMIT_VALIDATE": "60/minute",
    "RATE_LIMIT_MCP": "300/minute",  # per key or OAuth grant, /api/mcp
    "RATE_LIMIT_BAD_KEY": "60/minute",  # per client IP: lookups finding no active key
    "RATE_LIMIT_OAUTH": "120/minute",  # per client IP: /oauth/* and the discovery documents
    # Per client IP: wrong connect codes typed into the consent page (app.oauth.consent).
    "RATE_LIMIT_CONNECT_CODE": "5 per 15 minutes",
    # Per client IP: dynamic client registrations (POST /oauth/register); and in all, from every
    # address, in any 24 hours (counted in the database: app.oauth.registration).
    "RATE_LIMIT_OAUTH_REGISTER": "20/hour",
    "OAUTH_REGISTRATIONS_PER_DAY": 1000,
    # Where egis is served from outside (https://analytics.example.com): the OAuth issuer and
    # the base of the MCP resource. Empty: the request's scheme and host (app.oauth.public).
    "PUBLIC_URL": "",
    # Client ID metadata documents on loopback or private addresses (tests, private networks);
    # off, such a URL is refused (server-side request forgery).
    "OAUTH_PRIVATE_CLIENT_URLS": False,
    "TRUSTED_PROXIES": 0,
    "MAX_BODY_BYTES": 1_048_576,
    "SAMPLE_RATE": 0.1,
    # Batch ids are remembered this long: a resend within it is a duplicate; `flask data prune`
    # forgets older ones (the batch table gains a row per request).
    "IDEMPOTENCY_DAYS": 30,
    # How long a looked-up key stays cached in a worker: a revoked key stops working within it.
    "KEY_CACHE_SECONDS": 30,
    # How long a worker trusts its cached view of a site's month usage before re-reading it.
    "USAGE_CACHE_SECONDS": 5,
    "DB_MAX_CONNECTIONS": 8,
    # PostgreSQL: the longest a request waits for the database in all, a COMMIT waiting for a
    # synchronous standby included; past it the connection is closed and the answer is a 503
    # (app.storage.deadline). The agent's tool calls get EGIS_AGENT_QUERY_SECONDS more.
    "REQUEST_DEADLINE_SECONDS": 10.0,
    # A tool call's statement limit (app.agent.catalogue).
    "AGENT_QUERY_SECONDS": 20.0,
    # PostgreSQL: a transaction of egis's left idle this long ends its session (app.storage.db).
    "DB_IDLE_TRANSACTION_SECONDS": 30.0,
    # How often a worker writes its counts of what was not stored (app.runtime.tally); 0: at once.
    "TALLY_FLUSH_SECONDS": 1.0,
    # How long after a worker stores events it merges them into the rollups (app.rollups); 0:
    # in the request. Reads merge first, so this bounds only the work a read may find waiting.
    "ROLLUP_MERGE_SECONDS": 2.0,
    # The longest a merge waits for inserts in flight (or another merge); a read then answers
    # from what is merged, with a warning (app.analytics.reading).
    "ROLLUP_WAIT_SECONDS": 2.0,
    # A PostgreSQL streaming replica (hot standby) of DATABASE_URL that the agent's tools read
    # from, and how long a call waits for it to replay past its merge (app.storage.replica).
    "READ_DATABASE_URL": "",
    "READ_REPLICA_WAIT_SECONDS": 2.0,
    # PostgreSQL: concurrent requests of a worker share one commit (app.tracking.writer).
    "GROUP_COMMIT": True,
    "VERIFY_CRAWLERS": False,
    "DNS_SERVER": "",
    "DNS_TIMEOUT": 1.0,
    # A MaxMind-format country database (DB-IP Lite, GeoLite2) for visit:country; empty: the
    # registry data bundled in iptocc (app/context/country.py).
    "GEOIP_DB": "",
}


def load(app: Flask, overrides: dict[str, Any] | None = None) -> None:
    app.config.from_mapping(DEFAULTS)
    app.config.from_prefixed_env("EGIS")
    app.config["DATABASE_URL"] = os.environ.get(
        "DATABASE_URL", f"sqlite:///{os.path.join(app.instance_path, 'egis.sqlite3')}"
    )
    # The built tracker (sdk/dist/tracker.js, committed), served at /tracker.js.
    app.config.setdefault("TRACKER_PATH",
                          os.path.join(os.path.dirname(app.root_path), "sdk", "dist", "tracker.js"))
    if overrides:
        app.config.update(overrides)
    app.config["WRITE_KEY_PREFIX"] = f"{app.config['KEY_PREFIX']}_"
    app.config["SERVER_KEY_PREFIX"] = f"{app.config['KEY_PREFIX']}s_"
    app.config["READ_KEY_PREFIX"] = f"{app.config['KEY_PREFIX']}r_"
