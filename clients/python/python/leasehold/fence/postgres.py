"""Fencing in PostgreSQL through psycopg 3: the fence is a table beside the
data it protects, and the token check, the record of the new highest
token and the caller's own statements commit (or roll back) as one
transaction.

The tables are ``crates/fence/migrations/postgres`` (:func:`migrate`) and
the statements are ``leasehold_fence::postgres::statements``, both read
from the native module: the Rust adapter and this one share one copy, so
each fences the other's writes.

Example::

    import psycopg
    from leasehold.fence.postgres import fenced_transaction, migrate

    with psycopg.connect(dsn) as conn:
        migrate(conn)
        with fenced_transaction(conn, "accounts", guard.name, guard.fence()):
            conn.execute("UPDATE accounts SET balance = balance - 10 WHERE id = 7")
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Any, Iterator, List, Optional, Sequence, Tuple, TypeVar

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import tuple_row

from leasehold import _native
from leasehold.errors import InvalidArgument
from leasehold.fence import Rejection

__all__ = ["TOKEN_MAX", "migrate", "fenced_transaction", "rejections", "highest"]

TOKEN_MAX: int = _native.POSTGRES_TOKEN_MAX
"""The highest token this adapter accepts (``i64::MAX``: tokens are stored
as ``bigint``). Higher ones raise :class:`~leasehold.errors.InvalidArgument`
before any SQL is sent."""

ConnectionT = TypeVar("ConnectionT", bound="psycopg.Connection[Any]")

_log = logging.getLogger(__name__)


def migrate(conn: psycopg.Connection[Any]) -> None:
    """Creates the fence tables if they do not exist and records their
    schema version (the shared migration files); tables of a newer schema
    version than this adapter knows raise
    ``psycopg.errors.ObjectNotInPrerequisiteState`` naming both versions,
    before anything is changed. Idempotent and safe from several processes
    at once; call it at start-up. ``conn`` must have no transaction open
    (the files commit their own); its autocommit setting is restored
    afterwards."""
    _require_idle(conn, "migrate")
    autocommit = conn.autocommit
    conn.autocommit = True
    try:
        conn.execute(_native.POSTGRES_MIGRATION)
    except psycopg.Error:
        # The files open their own transactions: end the failed one, so
        # the connection is usable.
        conn.execute("ROLLBACK")
        raise
    finally:
        conn.autocommit = autocommit


@contextmanager
def fenced_transaction(
    conn: ConnectionT, resource: str, lock: str, token: int
) -> Iterator[ConnectionT]:
    """A transaction on ``conn`` that writes only if ``token`` is at least
    the highest accepted for (``resource``, ``lock``).

    The check, which also records ``token`` as the new highest, is the
    transaction's first statement; it holds the fence row's lock until the
    end, so no writer of the same pair slips in between. The body's
    statements (on ``conn``, which the ``with`` yields) run inside; the
    transaction commits when the body ends and rolls back if it raises, and
    then ``token`` is not recorded either.

    A stale token rolls back before the body runs, records the refusal in
    ``leasehold_fence_rejections`` (see :func:`rejections`) and raises
    :class:`~leasehold.errors.StaleToken`: the lock has passed to a newer
    holder, stop writing. A token above :data:`TOKEN_MAX` raises
    :class:`~leasehold.errors.InvalidArgument` before any SQL, and so does a
    ``conn`` with a transaction already open (the check could not be its
    first statement).
    """
    token_sql = _native.postgres_token(token)
    _require_idle(conn, "fenced_transaction")
    highest_sql: Optional[int] = None
    with conn.transaction() as tx:
        accepted = _fetch(conn, _native.POSTGRES_UPSERT, (resource, lock, token_sql))
        if accepted:
            yield conn
        else:
            # The upsert locked the fence row: this reads the committed highest.
            highest_sql = int(_fetch(conn, _native.POSTGRES_HIGHEST, (resource, lock))[0][0])
            raise psycopg.Rollback(tx)
    if highest_sql is not None:
        _record_rejection(conn, resource, lock, token_sql, highest_sql)
        raise _native.stale_token(resource, lock, token_sql, highest_sql)


def rejections(conn: psycopg.Connection[Any], limit: int = 100) -> List[Rejection]:
    """The most recent ``limit`` refused writes (of any resource and lock,
    by any client of the tables, Rust or Python), newest first."""
    if limit < 0:
        raise InvalidArgument(
            f"invalid limit: {limit} is negative",
            field="limit",
            detail=f"{limit} is negative",
        )
    rows = _read(conn, _native.POSTGRES_REJECTIONS, (limit,))
    return [Rejection(str(r[0]), str(r[1]), int(r[2]), int(r[3]), int(r[4])) for r in rows]


def highest(conn: psycopg.Connection[Any], resource: str, lock: str) -> Optional[int]:
    """The highest token accepted for (``resource``, ``lock``); ``None`` if
    none has been yet."""
    rows = _read(conn, _native.POSTGRES_HIGHEST, (resource, lock))
    return int(rows[0][0]) if rows else None


def _require_idle(conn: psycopg.Connection[Any], what: str) -> None:
    """Refuses a connection inside a transaction (explicit, or the one
    psycopg opened implicitly at the last ``execute``)."""
    if conn.info.transaction_status != TransactionStatus.IDLE:
        detail = (
            f"{what} needs a connection with no transaction open; "
            "commit or roll back first (or use autocommit)"
        )
        raise InvalidArgument(f"invalid conn: {detail}", field="conn", detail=detail)


def _fetch(
    conn: psycopg.Connection[Any], sql: str, params: Sequence[Any]
) -> List[Tuple[Any, ...]]:
    """Runs one statement, its rows as tuples whatever the connection's
    ``row_factory``."""
    with conn.cursor(row_factory=tuple_row) as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall() if cursor.description is not None else []


def _read(conn: psycopg.Connection[Any], sql: str, params: Sequence[Any]) -> List[Tuple[Any, ...]]:
    """A read in its own short transaction if none is open, so it does not
    leave psycopg's implicit one open behind it (which would stop the next
    :func:`fenced_transaction`); inside the caller's transaction otherwise."""
    if conn.info.transaction_status != TransactionStatus.IDLE:
        return _fetch(conn, sql, params)
    with conn.transaction():
        return _fetch(conn, sql, params)


def _record_rejection(
    conn: psycopg.Connection[Any], resource: str, lock: str, presented: int, highest: int
) -> None:
    """Writes the refusal's audit row (after the refused transaction rolled
    back). A failure is logged, not raised: the refusal is what the caller
    must act on."""
    _log.warning(
        "refused a stale write: resource %r, lock %r, token %d below %d",
        resource,
        lock,
        presented,
        highest,
    )
    try:
        with conn.transaction():
            _fetch(conn, _native.POSTGRES_RECORD_REJECTION, (resource, lock, presented, highest))
    except psycopg.Error as error:
        _log.warning("could not write the rejection audit row for %r/%r: %s", resource, lock, error)
