"""The renewer cannot be starved: the lease keeper runs on the native
runtime's threads, which never take the GIL. A lock with ttl 2 s stays held
while Python holds the GIL for 6 s, or while an asyncio loop is blocked by
``time.sleep(6)``: its token still fences afterwards, and a second client
queueing for the lock the whole time never gets it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import leasehold

from conftest import Service, binary, unique

#: Long enough to expire the 2 s lease three times over, were it not renewed.
STALL_S = 6.0
#: The prober queues a little longer than the stall, so it covers it.
PROBER_WAIT_S = STALL_S + 1.0
#: Exit code of `leasehold acquire` when the wait ran out (docs: exit codes).
EXIT_BUSY = 3


def start_prober(server: Service, name: str) -> "subprocess.Popen[str]":
    """Another client, in another process, queueing for the lock."""
    return subprocess.Popen(
        [binary(), "acquire", name, "--ttl", "30s", "--wait", f"{int(PROBER_WAIT_S)}s", "--endpoints", server.endpoint],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def assert_never_acquired(prober: "subprocess.Popen[str]") -> None:
    out, err = prober.communicate(timeout=PROBER_WAIT_S + 20)
    assert prober.returncode == EXIT_BUSY, f"the prober got the lock (exit {prober.returncode}): {out} {err}"


def spin_holding_the_gil(seconds: float) -> None:
    """Pure Python busy work; with a huge switch interval no other Python
    thread could take the GIL from it meanwhile."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(seconds * 10)
    try:
        end = time.monotonic() + seconds
        spins = 0
        while time.monotonic() < end:
            spins += 1
    finally:
        sys.setswitchinterval(previous)


def test_a_thread_holding_the_gil_does_not_starve_renewal(server: Service, client: leasehold.Client) -> None:
    name = unique("gil")
    with client.lease(ttl=2) as lease, lease.lock(name, fenced=True) as guard:
        token = guard.fence()
        prober = start_prober(server, name)
        spin_holding_the_gil(STALL_S)
        assert guard.fence() == token
        assert not guard.lost.is_set()
        assert_never_acquired(prober)
        holder = client.holder(name)
        assert holder is not None and holder.token == token


def test_a_blocked_event_loop_does_not_starve_renewal(server: Service) -> None:
    name = unique("loop")

    async def hold() -> None:
        client = await leasehold.Client.connect_async(server.endpoint)
        async with client.lease(ttl=2) as lease, lease.lock(name, fenced=True) as guard:
            token = guard.fence()
            prober = start_prober(server, name)
            time.sleep(STALL_S)  # blocks the event loop, on purpose
            assert guard.fence() == token
            assert not guard.lost.is_set()
            assert_never_acquired(prober)

    asyncio.run(hold())
