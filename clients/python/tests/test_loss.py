"""Loss is heard: an operator's force release or lease revoke from the
command line sets ``lost`` within one renewal interval, runs ``on_lost``
callbacks, and cancels the asyncio task working under ``async with``
(which then ends with ``LockLost``). A task cancelled for its own reasons
still releases its lock."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import List

import pytest

import leasehold

from conftest import Service, binary, unique, wait_for

#: The lease ttl of these tests; keep-alives go every ttl/3.
TTL_S = 6.0
RENEWAL_INTERVAL_S = TTL_S / 3
#: Slack over one renewal interval for the round trip on a loaded machine.
SLACK_S = 1.5


def test_force_release_is_heard_within_one_renewal_interval(server: Service, client: leasehold.Client) -> None:
    name = unique("forced")
    with client.lease(ttl=TTL_S) as lease:
        guard = lease.lock(name, fenced=True).acquire()
        heard: List[leasehold.LockLost] = []
        called = threading.Event()

        def hear(error: leasehold.LockLost) -> None:
            heard.append(error)
            called.set()

        guard.on_lost(hear)
        server.cli("force-release", name, "--token", str(guard.token), "--reason", "python client test")
        forced_at = time.monotonic()
        assert guard.lost.wait(timeout=RENEWAL_INTERVAL_S + SLACK_S), "the loss was not heard"
        heard_after_s = time.monotonic() - forced_at
        assert heard_after_s <= RENEWAL_INTERVAL_S + SLACK_S, heard_after_s
        with pytest.raises(leasehold.LockLost) as lost:
            guard.fence()
        assert lost.value.cause == "released_by_server"
        assert lost.value.lock == name and not lost.value.voluntary
        assert called.wait(timeout=10)
        assert heard[0].cause == "released_by_server"
        assert not lease.lost.is_set(), "a force release of one lock leaves the lease alive"


def test_lease_revoked_from_the_cli_is_heard(server: Service, client: leasehold.Client) -> None:
    name = unique("revoked")
    with client.lease(ttl=TTL_S) as lease, lease.lock(name) as guard:
        server.cli("lease", "revoke", str(lease.id))
        revoked_at = time.monotonic()
        assert lease.lost.wait(timeout=RENEWAL_INTERVAL_S + SLACK_S)
        assert time.monotonic() - revoked_at <= RENEWAL_INTERVAL_S + SLACK_S
        assert guard.lost.is_set()
        error = guard.lost.error
        assert error is not None and error.cause == "lease_not_found"


def test_the_task_under_async_with_is_cancelled_at_the_loss(server: Service) -> None:
    name = unique("cancelled")

    async def work() -> float:
        client = await leasehold.Client.connect_async(server.endpoint)
        async with client.lease(ttl=TTL_S) as lease:
            with pytest.raises(leasehold.LockLost) as lost:
                async with lease.lock(name, fenced=True) as guard:
                    forced = await asyncio.create_subprocess_exec(
                        binary(), "force-release", name, "--token", str(guard.token),
                        "--reason", "python asyncio test", "--endpoints", server.endpoint,
                    )
                    assert await forced.wait() == 0
                    forced_at = time.monotonic()
                    await asyncio.sleep(60)  # guarded work: stopped by the loss
            assert lost.value.cause == "released_by_server"
            return time.monotonic() - forced_at

    stopped_after_s = asyncio.run(asyncio.wait_for(work(), timeout=30))
    assert stopped_after_s <= RENEWAL_INTERVAL_S + SLACK_S


def test_cancel_on_loss_can_be_turned_off(server: Service) -> None:
    name = unique("kept")

    async def work() -> bool:
        client = await leasehold.Client.connect_async(server.endpoint)
        async with client.lease(ttl=TTL_S) as lease:
            async with lease.lock(name, fenced=True, cancel_on_loss=False) as guard:
                server.cli("force-release", name, "--token", str(guard.token), "--reason", "test")
                await guard.lost.wait_async()
                await asyncio.sleep(0.2)  # not cancelled
                return guard.lost.is_set()

    assert asyncio.run(asyncio.wait_for(work(), timeout=30))


def test_a_cancelled_task_still_releases_its_lock(server: Service, client: leasehold.Client) -> None:
    name = unique("shielded")

    async def main() -> None:
        native = await leasehold.Client.connect_async(server.endpoint)
        holding = asyncio.Event()

        async def hold() -> None:
            async with native.lease(ttl=TTL_S) as lease, lease.lock(name):
                holding.set()
                await asyncio.sleep(60)

        task = asyncio.ensure_future(hold())
        await asyncio.wait_for(holding.wait(), timeout=10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    # Released (not left to expire): free well within the lease's ttl.
    wait_for("the lock to be free", TTL_S / 2, lambda: True if client.holder(name) is None else None)
