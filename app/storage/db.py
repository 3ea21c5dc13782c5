"""Binds the models' database handle: pooled PostgreSQL or SQLite, a connection per request;
and the read replica's pool, when EGIS_READ_DATABASE_URL names one."""
import os
from dataclasses import dataclass
from time import monotonic
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

from flask import Flask, current_app, g, has_request_context, request
from peewee import Database, OperationalError, PostgresqlDatabase, ProgrammingError
from playhouse.db_url import connect as connect_url
from playhouse.db_url import register_database
from playhouse.pool import PooledPostgresqlDatabase

from app.storage import deadline
from models import database

UNDEFINED_STATEMENT = "26000"  # PostgreSQL's invalid_sql_statement_name
STATEMENT_MILLISECONDS = 15000  # PostgreSQL statement_timeout of every egis connection
SQLITE_BUSY_MILLISECONDS = 10000  # how long a SQLite writer waits for the write lock
_read_databases: list[Database] = []  # the replicas' pools made in this process


@dataclass(frozen=True)
class PreparedStatement:
    """A PostgreSQL statement prepared once per pooled connection, on its first use.

    Parsing and planning the ingest statement took 40 % of PostgreSQL's time for a one-event
    batch; prepared, that is paid once per connection instead of once per request. Preparing
    lazily (when EXECUTE says the name is unknown) works for connections of any age and for
    databases whose tables did not exist yet when the connection opened.
    """

    name: str
    parameters: tuple[tuple[str, str], ...]  # (parameter name, SQL type), in $1, $2 ... order
    body: str  # the statement, with $1, $2 ... placeholders

    def execute(self, values: dict[str, Any]) -> Any:
        execute = (f"EXECUTE {self.name}("
                   + ", ".join(f"%({name})s" for name, _type in self.parameters) + ")")
        try:
            return database.execute_sql(execute, values)
        except (OperationalError, ProgrammingError) as error:
            # Peewee keeps the driver's exception as `orig`; its pgcode says what failed.
            if getattr(getattr(error, "orig", None), "pgcode", None) != UNDEFINED_STATEMENT:
                raise
        types = ", ".join(sql_type for _name, sql_type in self.parameters)
        # In one transaction: behind a transaction pooler (PgBouncer) that is one server
        # connection, which may hold the statement already although the EXECUTE's did not.
        with database.atomic():
            if database.execute_sql("SELECT 1 FROM pg_prepared_statements WHERE name = %s",
                                    (self.name,)).fetchone() is None:
                database.execute_sql(f"PREPARE {self.name}({types}) AS {self.body}")
            return database.execute_sql(execute, values)


class PostgresPool(PooledPostgresqlDatabase):
    """The pool without a `SELECT 1` round trip on every checkout.

    Peewee pings an idle connection each time it hands it out; on the ingest path that doubles
    the round trips. A connection that died with the server fails its next statement instead:
    psycopg2 then marks it closed, that request answers 503 (clients retry), and the pool drops
    it when it comes back, so the following requests get fresh connections.
    """

    session_settings: ClassVar[dict[str, str]] = {}  # SET after connecting (make_database)

    def _is_closed(self, conn: Any) -> bool:
        return bool(conn.closed) or self._adapter.txn_status(conn) == self._adapter.txn_unknown

    def _initialize_connection(self, conn: Any) -> None:
        # SET, not startup `options`: PgBouncer refuses those (deploy/SCALING.md, "PgBouncer").
        # Part of connecting, so bounded like it: a server that accepted the connection and
        # froze must not hold the request past connect_timeout.
        if self.session_settings:
            seconds = float(self.connect_params.get("connect_timeout", 3))
            if has_request_context() and "database_due" in g:  # within the request's too
                seconds = min(seconds, g.database_due - monotonic())
            with deadline.watching(conn, seconds), conn.cursor() as cursor:
                cursor.execute("".join(f"SET {name} = %s;" for name in self.session_settings),
                               list(self.session_settings.values()))

    def commit(self) -> None:
        with deadline.primary_or_unavailable(self._state.conn):
            super().commit()
        deadline.raise_if_unreplicated(self._state.conn)

    def execute_sql(self, sql: str, params: Any = None) -> Any:
        with deadline.primary_or_unavailable(self._state.conn):
            cursor = super().execute_sql(sql, params)
        if not self.in_transaction():  # autocommit: the statement's own commit
            deadline.raise_if_unreplicated(self._state.conn)
        return cursor


register_database(PostgresPool, "egis+postgres")

# The JSON field type of models.base, per backend.
_JSON_TYPES = {"postgresql": {"JSON": "JSONB"}, "sqlite": {"JSON": "TEXT"}}


def make_database(url: str, max_connections: int = 8, idle_transaction_seconds: float = 30,
                  connect_timeout: int = 3) -> Database:
    """A Peewee database for a DATABASE_URL; PostgreSQL is always pooled.

    On PostgreSQL a transaction of egis's left idle `idle_transaction_seconds` ends the
    session (idle_in_transaction_session_timeout): a stuck worker can then hold no lock, nor
    the rollups' merge (app.rollups.mark), for longer. No egis transaction idles by design but
    a tool call's, while a statement of its own runs beside it (app.analytics.reading's
    `concurrently`): so the value must exceed EGIS_AGENT_QUERY_SECONDS (20 s)."""
    scheme, _, rest = url.partition("://")
    if scheme in ("postgres", "postgresql"):
        _refuse_netloc_hosts(url)
        idle = max(1, int(idle_transaction_seconds * 1000))
        pool = connect_url(
            f"egis+postgres://{rest}",
            autoconnect=False,
            field_types=_JSON_TYPES["postgresql"],
            max_connections=max_connections,
            stale_timeout=300,
            timeout=10,
            connect_timeout=connect_timeout,
            # A database that stops answering must not hold a worker until gunicorn kills it.
            keepalives=1, keepalives_idle=30, keepalives_interval=10, keepalives_count=3,
            **_without_gssapi_probe(url),
        )
        pool.session_settings = {"statement_timeout": str(STATEMENT_MILLISECONDS),
                                 "idle_in_transaction_session_timeout": str(idle)}
        return pool
    if scheme == "sqlite":
        path = rest[1:] if rest.startswith("/") else rest
        if path and path != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        return connect_url(
            url,
            autoconnect=False,
            field_types=_JSON_TYPES["sqlite"],
            pragmas={"journal_mode": "wal", "busy_timeout": SQLITE_BUSY_MILLISECONDS,
                     "foreign_keys": 1},
        )
    raise ValueError(f"DATABASE_URL must be postgresql://... or sqlite:///...; got {scheme!r}")


def _refuse_netloc_hosts(url: str) -> None:
    """Stop at start, with one sentence, on a multi-host URL in libpq's netloc form, which
    Peewee's URL parser cannot read (it would fail with a ValueError on the port)."""
    if "," in urlsplit(url).netloc:
        raise SystemExit(
            "A database URL with several hosts must name them in its query, as in "
            "postgresql://user@/egis?host=h1,h2,h3&port=5432,5432,5432"
            "&target_session_attrs=read-write, not as h1:p1,h2:p2 before the path.")


def _without_gssapi_probe(url: str) -> dict[str, str]:
    """gssencmode=disable unless the URL or PGGSSENCMODE says otherwise.

    libpq's default (prefer) looks for Kerberos credentials on each new connection, to offer
    GSSAPI encryption: that loads the Kerberos libraries into every worker (~1 MiB of its
    resident memory, bench/README.md "Memory per worker") for a setup egis does not document.
    """
    if "gssencmode" in parse_qs(urlsplit(url).query) or "PGGSSENCMODE" in os.environ:
        return {}
    return {"gssencmode": "disable"}


def is_postgres() -> bool:
    return isinstance(database.obj, PostgresqlDatabase)


def without_database(view: Any) -> Any:
    """Mark a view that must answer without a database connection (health, metrics)."""
    view.without_database = True
    return view


def reads_without_primary(view: Any) -> Any:
    """Mark a view whose reads go on when the primary cannot be reached (a failover's seconds),
    on the read replica: its connection to the primary is then left unopened."""
    view.reads_without_primary = True
    return view


def primary_unavailable() -> bool:
    """Whether this request found the primary unreachable (a `reads_without_primary` view's)."""
    return has_request_context() and bool(g.get("primary_unavailable"))


def _open_connection() -> None:
    view = current_app.view_functions.get(request.endpoint or "")
    if request.method == "OPTIONS" or view is None or getattr(view, "without_database", False):
        return
    g.database_due = monotonic() + deadline.request_seconds(current_app.config, view)
    try:
        database.connect(reuse_if_open=True)
    except OperationalError:
        if not getattr(view, "reads_without_primary", False) or read_database() is None:
            raise
        g.primary_unavailable = True
        return
    if is_postgres():
        g.database_watch = deadline.watch(database.connection(), g.database_due)


def _close_connection(_exc: BaseException | None) -> None:
    watch = g.pop("database_watch", None)
    if watch is not None and deadline.release(watch) and not database.is_closed():
        database.connection().close()  # cancelled or cut: never handed to another request
    if not database.is_closed():
        database.close()


def init_app(app: Flask) -> None:
    # Only configured here, never connected: gunicorn forks workers after the app is built.
    idle = float(app.config["DB_IDLE_TRANSACTION_SECONDS"])
    database.initialize(
        make_database(app.config["DATABASE_URL"], app.config["DB_MAX_CONNECTIONS"], idle)
    )
    app.extensions["egis_read_database"] = _read_database(app.config, idle)
    app.before_request(_open_connection)
    app.teardown_appcontext(_close_connection)


def _read_database(config: Any, idle_transaction_seconds: float) -> Database | None:
    """The replica's pool (EGIS_READ_DATABASE_URL), or None. It connects within the longest
    wait for the replica (libpq counts whole seconds, 2 at least), so that a replica host
    that does not answer costs a read that much before the primary answers it."""
    url = config.get("READ_DATABASE_URL") or ""
    if not url:
        return None
    if url.partition("://")[0] not in ("postgres", "postgresql"):
        raise ValueError("EGIS_READ_DATABASE_URL must be postgresql://... (a streaming replica "
                         "of DATABASE_URL)")
    wait = float(config["READ_REPLICA_WAIT_SECONDS"])
    replica = make_database(url, config["DB_MAX_CONNECTIONS"], idle_transaction_seconds,
                            connect_timeout=max(2, round(wait)))
    _read_databases.append(replica)
    return replica


def read_database() -> Database | None:
    """The read replica's pool of this app (EGIS_READ_DATABASE_URL), None without one."""
    return current_app.extensions.get("egis_read_database")


def release_connections() -> None:
    """Close every pooled connection of this process, the replicas' too (tests; shutdown)."""
    for target in (database.obj, *_read_databases):
        if target is None:
            continue
        if not target.is_closed():
            target.close()
        close_all = getattr(target, "close_all", None)
        if close_all is not None:
            close_all()

