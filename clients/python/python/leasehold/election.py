"""Leader election: who leads an election (:class:`Leader`), and following
every change of it (:class:`Observer`).

An election is a lock: :meth:`Lease.campaign <leasehold.Lease.campaign>`
acquires it carrying a value (what observers read: an address, an id),
the guard leads, its token is the epoch (strictly increasing per
election: pass it to the protected resource as a lock's token),
:meth:`Guard.proclaim <leasehold.Guard.proclaim>` changes the value, and
releasing resigns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Optional, Tuple

from leasehold import _native, _wait


@dataclass(frozen=True)
class Leader:
    """The leader of an election."""

    lease: int
    token: int
    """Its epoch: the grant's fencing token."""
    owner: str
    value: str


@dataclass(frozen=True)
class LeaderChange:
    """An election after a change: ``leader`` is ``None`` when nobody leads."""

    leader: Optional[Leader]
    revision: int


def leader_of(found: Optional[Tuple[int, int, str, str]]) -> Optional[Leader]:
    """A leader from its native form."""
    return None if found is None else Leader(*found)


def _change(found: Any) -> Optional[LeaderChange]:
    if found is None:
        return None
    leader, revision = found
    return LeaderChange(leader_of(leader), revision)


class Observer:
    """One election's changes, in order: first the leader when observing
    began, then each new leader, new value, and ``None`` leader when the
    leader resigned, expired or was force-released and nobody took over in
    the same step. Iterate over it, or call :meth:`next`."""

    def __init__(self, native: _native.Observer) -> None:
        self._native = native

    def next(self) -> Optional[LeaderChange]:
        """The next change (waits for it); ``None`` once the server ended
        the stream (observe again)."""
        return _change(_wait.result(self._native.next()))

    async def next_async(self) -> Optional[LeaderChange]:
        """:meth:`next` for asyncio."""
        return _change(await _wait.result_async(self._native.next()))

    def __iter__(self) -> Iterator[LeaderChange]:
        while True:
            change = self.next()
            if change is None:
                return
            yield change
