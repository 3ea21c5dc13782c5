"""A duplicate is answered only once its first copy is durable.

A resend finds its batch id, `orderId` or `Idempotency-Key` stored and is answered 200 with
`"duplicate": true`: a promise that the first copy is kept. But the first copy's COMMIT may
have been cut while it waited for the synchronous standby (egis answered that request 503,
app.storage.deadline), leaving the copy on the primary alone, which a failover can lose; and a
zombie primary (its Patroni dead, its standbys gone to the new leader) holds such copies and no
standby at all. Reading the copy back commits nothing, so it waits for no standby: measured
with egis on a bare multi-host URL (bench.maintenance.cluster, the zombie without HAProxy),
the resends of batches cut at the deadline were answered `duplicate` by the zombie, and those
acknowledged batches were gone once it rejoined through pg_rewind.

A commit's wait for the standby covers all the WAL before it. So before a duplicate is
answered, `confirm` commits one transaction that writes one WAL record and nothing else (a
transactional pg_logical_emit_message, which any wal_level takes; an xid alone, from
pg_current_xact_id, writes nothing before its commit, and PostgreSQL does not make such a
commit wait): it returns once the standby holds the first copy too, and on a zombie it waits
until the request's deadline (503; app.storage.deadline). Only where synchronous replication is
on (`synchronous_standby_names`): on a lone PostgreSQL the statement writes nothing and its
commit waits for nothing, and SQLite, whose commits are durable when they return, skips it.
"""
from app.storage.db import is_postgres
from models import database

_BARRIER = ("SELECT pg_logical_emit_message(true, 'egis', 'durable') "
            "WHERE current_setting('synchronous_standby_names') <> ''")


def confirm() -> None:
    """Return once everything committed before is held by the synchronous standby (when
    there is one); within a transaction, its commit is the one that waits."""
    if is_postgres():
        with database.atomic():
            database.execute_sql(_BARRIER)
