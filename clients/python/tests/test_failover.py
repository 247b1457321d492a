"""Failover across a three-node cluster: the leader is killed while a lock
is held; the lease keeps being renewed through the new leader (the client
follows it), the token still fences, and new acquires work and are fenced
above every earlier token."""

from __future__ import annotations

import leasehold

from conftest import Service, unique, wait_for

#: Long enough to ride out an election (timeouts of about a second) with room.
TTL_S = 10.0


def test_a_held_lock_survives_the_leader_being_killed(cluster: Service) -> None:
    client = leasehold.Client(cluster.endpoints)
    name = unique("failover")
    with client.lease(ttl=TTL_S) as lease, lease.lock(name, fenced=True) as guard:
        token = guard.fence()
        old_leader = cluster.leader()
        cluster.nodes[old_leader].kill()
        new_leader = wait_for(
            "a new leader", 30, lambda: (lambda n: n if n != old_leader else None)(cluster.leader())
        )
        assert new_leader != old_leader
        # A renewal through the new leader, acknowledged: the lease held.
        assert lease.keep_alive_once() > 0
        assert guard.fence() == token
        assert not guard.lost.is_set()
        other = leasehold.Client(cluster.endpoints)
        with other.lease(ttl=TTL_S) as second:
            try:
                second.lock(name).acquire()
                raise AssertionError("the lock was granted twice")
            except leasehold.Busy as busy:
                assert busy.holder_token == token
            with second.lock(unique("after")) as later:
                assert later.fence() > token
