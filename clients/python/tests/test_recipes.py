"""Semaphores and read-write locks from Python (issue 18): ``limit=N``
lets at most N holders in, first come first served; ``shared=True``
readers hold together while an ``exclusive=True`` writer waits for them,
and its token is above theirs — against a real server."""

from __future__ import annotations

import threading
from typing import List, Optional

import pytest

import leasehold

from conftest import unique, wait_for


def test_a_semaphore_lets_at_most_its_limit_hold(client: leasehold.Client) -> None:
    name = unique("slots")
    with client.lease(ttl=10) as a, client.lease(ttl=10) as b, client.lease(ttl=10) as c:
        first = a.lock(name, limit=2).acquire()
        second = b.lock(name, limit=2).acquire()
        assert second.fence() > first.fence()
        with pytest.raises(leasehold.Busy):
            c.lock(name, limit=2).acquire()
        with pytest.raises(leasehold.InvalidArgument) as resized:
            c.lock(name, limit=3).acquire()
        assert "has 2 permits, not 3" in str(resized.value)
        first.release()
        third = c.lock(name, limit=2).acquire()
        assert third.fence() > second.fence()
        second.release()
        third.release()


def test_readers_share_and_the_writer_waits_for_them(client: leasehold.Client) -> None:
    name = unique("rw")
    written: List[int] = []
    with client.lease(ttl=10) as r1, client.lease(ttl=10) as r2, client.lease(ttl=10) as w:
        reader1 = r1.lock(name, shared=True).acquire()
        reader2 = r2.lock(name, shared=True).acquire()

        def write() -> None:
            with w.lock(name, exclusive=True, wait=20) as writer:
                written.append(writer.fence())

        thread = threading.Thread(target=write)
        thread.start()
        with client.lease(ttl=10) as late:
            # Once the writer waits, a later reader is not let in ahead of it.
            def refused() -> Optional[bool]:
                try:
                    late.lock(name, shared=True).acquire().release()
                    return None
                except leasehold.Busy:
                    return True

            wait_for("a later reader to be refused behind the writer", 10, refused)
        assert written == []
        reader1.release()
        reader2.release()
        thread.join(timeout=20)
        assert written and written[0] > max(reader1.token, reader2.token)


def test_a_name_is_one_kind_at_a_time(client: leasehold.Client) -> None:
    with client.lease(ttl=10) as lease:
        with pytest.raises(ValueError, match="cannot be combined"):
            lease.lock(unique("x"), limit=2, shared=True)


def test_a_big_ask_is_not_overtaken_by_later_small_ones(client: leasehold.Client) -> None:
    name = unique("big")
    with client.lease(ttl=10) as a, client.lease(ttl=10) as b, client.lease(ttl=10) as c:
        one = a.lock(name, limit=3).acquire()
        granted: List[int] = []

        def ask_for_three() -> None:
            with b.lock(name, limit=3, permits=3, wait=20) as big:
                granted.append(big.fence())

        thread = threading.Thread(target=ask_for_three)
        thread.start()

        # Two permits are free, but the big ask waits first: a small one is busy.
        def small_refused() -> Optional[bool]:
            try:
                c.lock(name, limit=3).acquire().release()
                return None
            except leasehold.Busy:
                return True

        wait_for("a small ask to be refused behind the big one", 10, small_refused)
        one.release()
        thread.join(timeout=20)
        assert granted and granted[0] > one.token
