"""Acquire, busy, wait, FIFO, release outcomes, the threading.Lock shape,
and limits named in errors — against a real server."""

from __future__ import annotations

import threading
import time
from typing import List

import pytest

import leasehold
from leasehold import ReleaseStatus

from conftest import Service, unique, wait_for


def test_acquire_gives_increasing_tokens_and_busy_names_the_holder(client: leasehold.Client) -> None:
    name = unique("jobs")
    with client.lease(ttl=10, owner="test-holder") as lease:
        with lease.lock(name, fenced=True) as guard:
            token = guard.fence()
            assert guard.name == name and guard.lease_id == lease.id
            with client.lease(ttl=10) as other:
                with pytest.raises(leasehold.Busy) as busy:
                    other.lock(name).acquire()
                assert busy.value.holder_token == token
                assert busy.value.reason == "Busy"
                assert name in str(busy.value) and "wait=" in str(busy.value)
                with pytest.raises(leasehold.WaitTimeout) as timed_out:
                    other.lock(name, wait=0.3).acquire()
                assert timed_out.value.waited >= 0.3
    with client.lease(ttl=10) as lease:
        with lease.lock(name) as guard:
            assert guard.fence() > token


def test_waiters_are_granted_in_fifo_order(server: Service, client: leasehold.Client) -> None:
    name = unique("fifo")
    granted: List[str] = []
    holder = client.lease(ttl=10).grant()
    first = holder.lock(name).acquire()

    def wait_in_line(who: str) -> None:
        with client.lease(ttl=10) as lease, lease.lock(name, wait=20) as guard:
            granted.append(who)
            guard.fence()

    def queued() -> int:
        waiters: int = server.cli_json("get", name)["waiters"]
        return waiters

    threads = []
    for who in ["second", "third"]:
        thread = threading.Thread(target=wait_in_line, args=(who,))
        thread.start()
        threads.append(thread)
        expected = len(threads)
        wait_for(f"{who} to queue", 10, lambda: True if queued() == expected else None)
    assert first.release().was_held
    for thread in threads:
        thread.join(timeout=30)
    assert granted == ["second", "third"]
    holder.revoke()


def test_release_says_what_it_found(server: Service, client: leasehold.Client) -> None:
    name = unique("outcomes")
    lease = client.lease(ttl=10).grant()
    guard = lease.lock(name, fenced=True).acquire()
    assert guard.release().status is ReleaseStatus.RELEASED

    # The lock taken away by an operator and then acquired by someone else.
    guard = lease.lock(name, fenced=True).acquire()
    server.cli("force-release", name, "--token", str(guard.token), "--reason", "test")
    with client.lease(ttl=10) as other, other.lock(name) as newer:
        outcome = guard.release()
        assert outcome.status is ReleaseStatus.HELD_BY_ANOTHER
        assert outcome.holder_token == newer.token
    # The lease revoked under a guard: the release finds it already ended.
    guard = lease.lock(name).acquire()
    server.cli("lease", "revoke", str(lease.id))
    assert guard.release().status is ReleaseStatus.ALREADY_EXPIRED
    with pytest.raises(RuntimeError, match="already released"):
        guard._native.release()


def test_threading_lock_shape(client: leasehold.Client) -> None:
    name = unique("nightly")
    lock = client.lock(name, ttl=5, fenced=True)
    other = client.lock(name, ttl=5)
    assert not lock.locked()
    assert lock.acquire(blocking=True, timeout=5)
    assert lock.locked()
    token = lock.fence()
    assert not other.acquire(blocking=False)
    started = time.monotonic()
    assert not other.acquire(timeout=0.5)
    assert time.monotonic() - started >= 0.5
    with pytest.raises(ValueError):
        other.acquire(blocking=False, timeout=1)
    lock.release()
    with pytest.raises(RuntimeError):
        lock.release()
    with other:
        assert other.fence() > token
    assert not other.locked()


def test_bad_input_names_the_limit(client: leasehold.Client) -> None:
    with pytest.raises(leasehold.InvalidArgument) as invalid:
        client.lease(ttl=0.2).grant()
    assert invalid.value.limit == "TTL_MS_MIN"
    assert invalid.value.field == "ttl"
    with client.lease(ttl=5) as lease:
        with pytest.raises(leasehold.InvalidArgument) as bad_name:
            lease.lock("x" * 600).acquire()
        assert bad_name.value.limit == "NAME_BYTES_MAX", bad_name.value
        with pytest.raises(ValueError, match="wait"):
            lease.lock(unique("x"), wait=-1).acquire()


def test_unreachable_server_is_unavailable() -> None:
    with pytest.raises(leasehold.Unavailable) as unavailable:
        leasehold.Client("http://127.0.0.1:1", connect_timeout=0.5, retry_budget=1)
    assert "127.0.0.1:1" in str(unavailable.value)


def test_a_forked_child_uses_the_client_on_its_own_threads(server: Service, client: leasehold.Client) -> None:
    import multiprocessing

    name = unique("forked")
    with client.lease(ttl=10) as lease, lease.lock(name):
        pass  # the runtime runs in the parent before the fork
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        token = pool.apply_async(_child_acquires, (server.endpoint, name)).get(timeout=60)
    assert token > 0


def _child_acquires(endpoint: str, name: str) -> int:
    child = leasehold.Client(endpoint)
    with child.lease(ttl=10) as lease, lease.lock(name) as guard:
        return guard.fence()
