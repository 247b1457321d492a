"""Leases: :class:`LeaseRequest` (``client.lease(ttl=...)``) and
:class:`Lease`, renewed on the native runtime's threads while it (or a
guard of it) lives. Leaving a ``with`` / ``async with`` block revokes it,
releasing every lock it still holds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Generator, List, Mapping, Optional, Sequence

from leasehold import _native, _wait
from leasehold._scope import _ending, _ending_async
from leasehold.errors import LockLost
from leasehold.guard import Guard, LockRequest
from leasehold.loss import LossEvent

if TYPE_CHECKING:
    from leasehold.client import Client


class Lease:
    """A granted lease: time-bound ownership, lost for good at the first
    definite renewal failure or when its local deadline (send time of the
    last acknowledged keep-alive + ttl − margin, on the boot clock) passes."""

    def __init__(self, native: _native.Lease) -> None:
        self._native = native
        self.lost = LossEvent(native.lost)
        """Set once the lease is gone (``is_set()``, ``wait(timeout)``)."""
        self._revoked: Optional[List[str]] = None

    def __repr__(self) -> str:
        return f"<leasehold.Lease id={self.id} ttl={self.ttl}s>"

    @property
    def id(self) -> int:
        """The lease id."""
        return self._native.id

    @property
    def ttl(self) -> float:
        """The ttl, in seconds."""
        return self._native.ttl

    def check(self) -> None:
        """Raises :class:`~leasehold.errors.LockLost` if the lease is lost."""
        self._native.lost.check()

    def on_lost(self, callback: Callable[[LockLost], None]) -> None:
        """Calls ``callback(error)`` from a background thread when the lease
        is taken away (expired, revoked elsewhere; not revoked here)."""
        self._native.lost.on_lost(callback)

    def lock(
        self,
        name: str,
        *,
        wait: float = 0.0,
        fenced: bool = False,
        lock_delay: Optional[float] = None,
        max_hold: Optional[float] = None,
        metadata: Optional[Mapping[str, str]] = None,
        cancel_on_loss: bool = True,
        limit: Optional[int] = None,
        shared: bool = False,
        exclusive: bool = False,
        permits: int = 1,
    ) -> LockRequest:
        """Starts acquiring ``name`` under this lease.

        ``wait``: seconds to wait in the lock's FIFO queue (0: fail at once
        with :class:`~leasehold.errors.Busy`). ``fenced``: declare that the
        protected resource checks tokens. ``lock_delay``: if this lease
        expires, keep the lock unavailable this long. ``max_hold``: release
        after this long however it is renewed. ``cancel_on_loss``: in
        ``async with``, cancel the task at the loss (default).

        At most one of these makes ``name`` something other than a lock:
        ``limit=N``, ``permits`` (default 1) of the N permits of a semaphore
        (a big ask is never overtaken by later small ones); ``shared=True``, a read-write lock as a reader, beside other
        readers; ``exclusive=True``, a read-write lock as its writer, alone.
        Grants are first come, first served, each with its own token, and
        the guard is a lock's (``fence()``, ``lost``, ``release()``)."""
        given = {"limit": limit is not None, "shared": shared, "exclusive": exclusive}
        chosen = [flag for flag, set_ in given.items() if set_]
        if permits != 1 and limit is None:
            raise ValueError("permits applies to a semaphore: give limit=N with it")
        if len(chosen) > 1:
            raise ValueError(
                f"{' and '.join(chosen)} cannot be combined: a name is one of a lock,"
                " a semaphore (limit) or a read-write lock (shared or exclusive)"
            )
        options: Dict[str, Any] = {
            "wait": wait,
            "fenced": fenced,
            "lock_delay": lock_delay,
            "max_hold": max_hold,
            "metadata": dict(metadata or {}),
            "limit": limit,
            "shared": shared,
            "exclusive": exclusive,
            "permits": permits,
        }
        return LockRequest(self, name, options, cancel_on_loss)

    def campaign(
        self,
        election: str,
        value: str,
        *,
        wait: float = 0.0,
        fenced: bool = False,
        lock_delay: Optional[float] = None,
        cancel_on_loss: bool = True,
    ) -> LockRequest:
        """Starts a campaign to lead ``election`` with ``value`` (what
        observers read: an address, an id). Campaigns wait their turn first
        come, first served (``wait`` seconds; 0 fails at once with
        :class:`~leasehold.errors.Busy` while another leads). The guard
        leads: its token is the epoch, :meth:`Guard.proclaim
        <leasehold.Guard.proclaim>` changes the value, releasing resigns.
        ``lock_delay``: if this lease expires, nobody leads for this long."""
        return self.lock(
            election,
            wait=wait,
            fenced=fenced,
            lock_delay=lock_delay,
            metadata={"value": value},
            cancel_on_loss=cancel_on_loss,
        )

    def acquire_all(self, names: Sequence[str], *, wait: float = 0.0, fenced: bool = False) -> List[Guard]:
        """Acquires every lock of ``names`` at once, all or none (no order
        of names can deadlock), waiting up to ``wait`` seconds for all of
        them as one waiter; raises :class:`~leasehold.errors.Busy` or
        :class:`~leasehold.errors.WaitTimeout` if they are not had. Returns
        a guard per lock, in order (each released on its own)."""
        natives = _wait.result(self._native.acquire_all(list(names), wait, fenced))
        return [Guard(native) for native in natives]

    async def acquire_all_async(
        self, names: Sequence[str], *, wait: float = 0.0, fenced: bool = False
    ) -> List[Guard]:
        """:meth:`acquire_all` for asyncio; cancelling the task cancels the wait."""
        natives = await _wait.result_async(self._native.acquire_all(list(names), wait, fenced))
        return [Guard(native) for native in natives]

    def revoke(self) -> List[str]:
        """Ends the lease now, releasing its locks; returns their names."""
        if self._revoked is None:
            self._revoked = list(_wait.result(self._native.revoke(), cancellable=False))
        return self._revoked

    async def revoke_async(self) -> List[str]:
        """:meth:`revoke` for asyncio; completes even if the task is cancelled."""
        if self._revoked is None:
            names = await _wait.result_async(self._native.revoke(), shield=True)
            self._revoked = list(names)
        return self._revoked

    def keep_alive_once(self) -> float:
        """Renews now; returns the seconds then left until the local deadline."""
        left: float = _wait.result(self._native.keep_alive_once())
        return left

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, exc_type: Optional[type], *exc: object) -> None:
        _ending(self.revoke, exc_type)

    async def __aenter__(self) -> "Lease":
        return self

    async def __aexit__(self, exc_type: Optional[type], *exc: object) -> None:
        await _ending_async(self.revoke_async(), exc_type)


class LeaseRequest:
    """A lease being set up (``client.lease(ttl=...)``): :meth:`grant` it,
    ``await`` it, or use it with ``with`` / ``async with`` (revoked at the
    block's end)."""

    def __init__(self, client: "Client", options: Dict[str, Any]) -> None:
        self._client = client
        self._options = options
        self._lease: Optional[Lease] = None

    def _call(self) -> _native.Call:
        return self._client._native.grant(**self._options)

    def grant(self) -> Lease:
        """Grants the lease and starts renewing it."""
        return Lease(_wait.result(self._call()))

    async def grant_async(self) -> Lease:
        """:meth:`grant` for asyncio."""
        return Lease(await _wait.result_async(self._call()))

    def __await__(self) -> Generator[Any, None, Lease]:
        return self.grant_async().__await__()

    def __enter__(self) -> Lease:
        self._lease = self.grant()
        return self._lease

    def __exit__(self, exc_type: Optional[type], *exc: object) -> None:
        if self._lease is not None:
            self._lease.__exit__(exc_type)

    async def __aenter__(self) -> Lease:
        self._lease = await self.grant_async()
        return self._lease

    async def __aexit__(self, exc_type: Optional[type], *exc: object) -> None:
        if self._lease is not None:
            await self._lease.__aexit__(exc_type)

