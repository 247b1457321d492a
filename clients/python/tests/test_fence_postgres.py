"""leasehold.fence.postgres against a real PostgreSQL.

The server is ``LEASEHOLD_TEST_POSTGRES`` (a libpq keyword string, which
``.ci/run`` exports). Unset: under ``CI=true`` the tests fail; elsewhere
they skip, loudly. Every test fences its own resource (a uuid) and writes
to its own temporary table, so tests may run in parallel and again
against one database. Each runs twice: on an autocommit connection and on
one where psycopg opens transactions implicitly.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any, Iterator, List

import pytest

psycopg = pytest.importorskip("psycopg")

from conftest import required_env  # noqa: E402
from leasehold.errors import InvalidArgument, StaleToken  # noqa: E402
from leasehold.fence import postgres  # noqa: E402
from leasehold.fence.postgres import TOKEN_MAX, fenced_transaction  # noqa: E402

LOCK = "billing/invoices"


def _dsn() -> str:
    """The PostgreSQL server to test against."""
    return required_env("LEASEHOLD_TEST_POSTGRES", "a libpq connection string")


@pytest.fixture(params=[True, False], ids=["autocommit", "implicit-transactions"])
def conn(request: Any) -> Iterator[Any]:
    """A connection with the fence tables and an empty temp table ``items``."""
    with psycopg.connect(_dsn(), autocommit=True) as c:
        c.execute("CREATE TEMP TABLE items (token bigint NOT NULL)")
        c.autocommit = request.param
        postgres.migrate(c)  # in either mode, leaving the mode and no transaction open
        assert c.autocommit == request.param
        assert c.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        yield c


@pytest.fixture
def resource() -> str:
    """A resource name no other test (or run) fences."""
    return f"items-{uuid.uuid4()}"


def write(conn: Any, resource: str, token: int) -> None:
    """One fenced insert of ``token`` into ``items``."""
    with fenced_transaction(conn, resource, LOCK, token) as tx:
        tx.execute("INSERT INTO items (token) VALUES (%s)", (token,))


def items(conn: Any) -> List[int]:
    """The tokens written to ``items``, committed or not, in order."""
    with conn.transaction():
        return [row[0] for row in conn.execute("SELECT token FROM items ORDER BY token")]


def test_the_first_write_and_higher_ones_are_accepted_and_commit(conn: Any, resource: str) -> None:
    assert postgres.highest(conn, resource, LOCK) is None
    write(conn, resource, 3)
    write(conn, resource, 8)
    assert items(conn) == [3, 8]
    assert postgres.highest(conn, resource, LOCK) == 8


def test_an_equal_token_is_accepted(conn: Any, resource: str) -> None:
    write(conn, resource, 5)
    write(conn, resource, 5)
    assert items(conn) == [5, 5]
    assert postgres.highest(conn, resource, LOCK) == 5


def test_a_stale_token_writes_nothing_and_its_refusal_is_recorded(conn: Any, resource: str) -> None:
    write(conn, resource, 7)
    ran = False
    with pytest.raises(StaleToken) as refused:
        with fenced_transaction(conn, resource, LOCK, 5) as tx:
            ran = True
            tx.execute("INSERT INTO items (token) VALUES (5)")
    assert not ran, "the body ran under a stale token"
    error = refused.value
    assert (error.key, error.lock, error.presented, error.highest) == (resource, LOCK, 5, 7)
    assert error.reason == "StaleToken" and "stale token 5" in str(error)
    assert items(conn) == [7]
    assert postgres.highest(conn, resource, LOCK) == 7
    mine = [r for r in postgres.rejections(conn, limit=1000) if r.resource == resource]
    assert [(r.lock, r.presented, r.highest) for r in mine] == [(LOCK, 5, 7)]
    assert mine[0].at_unix_ms > 0
    write(conn, resource, 7)  # the connection is usable, and 7 still writes
    assert items(conn) == [7, 7]


def test_rejections_are_newest_first(conn: Any, resource: str) -> None:
    write(conn, resource, 10)
    for stale in (4, 6):
        with pytest.raises(StaleToken):
            write(conn, resource, stale)
    mine = [r.presented for r in postgres.rejections(conn, limit=1000) if r.resource == resource]
    assert mine == [6, 4]
    assert postgres.rejections(conn, limit=0) == []


def test_a_failing_body_rolls_back_and_its_token_is_not_recorded(conn: Any, resource: str) -> None:
    write(conn, resource, 3)
    with pytest.raises(RuntimeError, match="body failed"):
        with fenced_transaction(conn, resource, LOCK, 9) as tx:
            tx.execute("INSERT INTO items (token) VALUES (9)")
            raise RuntimeError("body failed")
    assert items(conn) == [3]
    assert postgres.highest(conn, resource, LOCK) == 3
    write(conn, resource, 5)  # 9 was never recorded, so 5 is not stale
    assert items(conn) == [3, 5]


def test_tokens_outside_the_bigint_range_are_refused_before_sql(conn: Any, resource: str) -> None:
    for token in (TOKEN_MAX + 1, 2**64, -1):
        with pytest.raises(InvalidArgument) as refused:
            write(conn, resource, token)
        assert refused.value.field == "token"
        assert refused.value.reason == "InvalidArgument"
    with pytest.raises(InvalidArgument) as above:
        write(conn, resource, TOKEN_MAX + 1)
    assert above.value.limit == "TOKEN_MAX", str(above.value)
    assert postgres.highest(conn, resource, LOCK) is None
    write(conn, resource, TOKEN_MAX)
    assert postgres.highest(conn, resource, LOCK) == TOKEN_MAX


def test_a_connection_inside_a_transaction_is_refused(conn: Any, resource: str) -> None:
    with conn.transaction():
        with pytest.raises(InvalidArgument) as refused:
            write(conn, resource, 1)
    assert refused.value.field == "conn"
    assert postgres.highest(conn, resource, LOCK) is None


def test_a_stale_writer_waits_for_the_holder_and_is_refused_after_its_commit(
    conn: Any, resource: str
) -> None:
    """The check holds the fence row's lock to the end of the transaction:
    a lower token arriving meanwhile waits, then sees the committed token."""
    write(conn, resource, 1)
    outcome: List[BaseException] = []
    with psycopg.connect(_dsn(), autocommit=True) as other:
        waiting_pid = other.info.backend_pid

        def stale_writer() -> None:
            try:
                with fenced_transaction(other, resource, LOCK, 5):
                    pass
            except BaseException as error:  # reported to the test thread
                outcome.append(error)

        with fenced_transaction(conn, resource, LOCK, 9) as tx:
            tx.execute("INSERT INTO items (token) VALUES (9)")
            thread = threading.Thread(target=stale_writer, daemon=True)
            thread.start()
            _wait_for_lock_wait(waiting_pid)
        thread.join(timeout=10)
        assert not thread.is_alive(), "the stale writer is still waiting after the commit"
    [error] = outcome
    assert isinstance(error, StaleToken) and (error.presented, error.highest) == (5, 9)
    assert items(conn) == [1, 9]


def _wait_for_lock_wait(pid: int) -> None:
    """Waits (10 s at most) until backend ``pid`` waits on a lock. Asks over
    a connection of its own: the test's is inside the holder's transaction."""
    deadline = time.monotonic() + 10
    with psycopg.connect(_dsn(), autocommit=True) as observer:
        while time.monotonic() < deadline:
            row = observer.execute(
                "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)
            ).fetchone()
            if row is not None and row[0] == "Lock":
                return
            time.sleep(0.01)
    pytest.fail(f"backend {pid} did not wait for the fence row's lock within 10 s")


def test_tables_of_a_newer_schema_version_are_refused_and_left_as_they_were(conn: Any) -> None:
    schema = f"fence_schema_{uuid.uuid4().hex}"
    autocommit = conn.autocommit
    conn.autocommit = True
    conn.execute(f'CREATE SCHEMA "{schema}"')
    conn.execute(f'SET search_path TO "{schema}"')
    conn.autocommit = autocommit
    try:
        postgres.migrate(conn)
        conn.autocommit = True
        conn.execute("UPDATE leasehold_fence_schema SET version = 3")
        conn.autocommit = autocommit
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState) as refused:
            postgres.migrate(conn)
        said = str(refused.value)
        assert "schema version 3" in said and "version 2 and older" in said, said
        assert conn.autocommit == autocommit
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        with conn.transaction():
            kept = conn.execute("SELECT version FROM leasehold_fence_schema").fetchone()
        assert kept == (3,)
    finally:
        conn.autocommit = True
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        conn.execute("RESET search_path")
