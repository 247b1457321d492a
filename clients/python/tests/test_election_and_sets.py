"""Leader election and several locks at once from Python (issue 18): a
campaign leads or waits its turn, the epoch is the token, only the leader
proclaims, and an observer sees the leader, each new value, a hand-over,
and "no leader"; a set of locks is taken whole or not at all, and a set
that waits keeps the free lock it heads — against a real server."""

from __future__ import annotations

import threading
from typing import List, Optional

import pytest

import leasehold

from conftest import Service, unique, wait_for


def test_campaigns_lead_in_turn_and_an_observer_sees_every_change(client: leasehold.Client, server: Service) -> None:
    election = unique("svc")
    observer = client.observe(election)
    changes = iter(observer)
    assert next(changes).leader is None
    with client.lease(ttl=10, owner="a") as a, client.lease(ttl=10, owner="b") as b:
        leading = a.campaign(election, "10.0.0.1:80").acquire()
        first = next(changes).leader
        assert first is not None and (first.token, first.value, first.owner) == (leading.token, "10.0.0.1:80", "a")
        assert client.leader(election) == first

        leading.proclaim("10.0.0.1:81")
        assert next(changes).leader == leasehold.Leader(a.id, leading.token, "a", "10.0.0.1:81")
        with pytest.raises(leasehold.Busy):
            b.campaign(election, "10.0.0.2:80").acquire()

        granted: List[leasehold.Guard] = []
        waiting = threading.Thread(
            target=lambda: granted.append(b.campaign(election, "10.0.0.2:80", wait=30).acquire())
        )
        waiting.start()
        wait_for(
            "b's campaign to queue",
            10,
            lambda: True if server.cli_json("get", election).get("waiters") == 1 else None,
        )
        leading.release()
        waiting.join(timeout=30)
        successor = granted[0]
        assert successor.token > leading.token, "epochs increase"
        handed: Optional[leasehold.Leader] = next(changes).leader
        assert handed is not None and (handed.token, handed.value) == (successor.token, "10.0.0.2:80")
        # The resigned leader is told so here, before anything is sent.
        with pytest.raises(leasehold.LockLost):
            leading.proclaim("stale")

        b.revoke()
        assert next(changes).leader is None
        assert client.leader(election) is None


def test_several_locks_are_taken_all_or_none(client: leasehold.Client) -> None:
    a, b = unique("set-a"), unique("set-b")
    with client.lease(ttl=10) as x, client.lease(ttl=10) as y:
        held = x.lock(a).acquire()
        with pytest.raises(leasehold.Busy):
            y.acquire_all([b, a])
        # Refused whole: b was left free.
        x.lock(b).acquire().release()
        granted: List[List[leasehold.Guard]] = []
        waiting = threading.Thread(target=lambda: granted.append(y.acquire_all([b, a], wait=30)))
        waiting.start()
        # b is kept for the waiting set.
        wait_for("b to be kept for the set", 10, lambda: _busy(x, b))
        held.release()
        waiting.join(timeout=30)
        guards = granted[0]
        assert [g.name for g in guards] == [b, a]
        assert all(g.fence() > held.token for g in guards)
        for guard in guards:
            guard.release()


def _busy(lease: leasehold.Lease, name: str) -> Optional[bool]:
    try:
        lease.lock(name).acquire().release()
        return None
    except leasehold.Busy:
        return True
