"""Holding a lock: :class:`LockRequest` (how to acquire) and :class:`Guard`
(the held lock, its fencing token, its loss and its release).

In ``async with``, the task running the block is cancelled the moment the
lock is lost (``cancel_on_loss=True``, the default) and the block ends with
:class:`~leasehold.errors.LockLost`, so guarded work stops without polling.
Releases are shielded: a cancelled task's release still reaches the server.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Dict, Generator, Optional, Type

from leasehold import _native, _wait
from leasehold._scope import _ending, _ending_async
from leasehold.errors import LockLost
from leasehold.loss import LossEvent
from leasehold.outcome import ReleaseOutcome

if TYPE_CHECKING:
    from leasehold.lease import Lease


class Guard:
    """A held lock. Call :meth:`fence` right before each protected write;
    :meth:`release` when done (leaving a ``with`` block releases)."""

    def __init__(self, native: _native.Guard) -> None:
        self._native = native
        self.lost = LossEvent(native.lost)
        """Set once the lock is gone (``is_set()``, ``wait(timeout)``)."""
        self._released: Optional[ReleaseOutcome] = None
        self._scope_open = False
        self._cancelled_by_loss = False

    def __repr__(self) -> str:
        return f"<leasehold.Guard {self.name!r} token={self.token} lease={self.lease_id}>"

    @property
    def name(self) -> str:
        """The lock's name."""
        return self._native.name

    @property
    def token(self) -> int:
        """This grant's fencing token (prefer :meth:`fence`, which checks)."""
        return self._native.token

    @property
    def lease_id(self) -> int:
        """The lease that holds the lock."""
        return self._native.lease_id

    def proclaim(self, value: str) -> int:
        """Leading an election (acquired with :meth:`Lease.campaign
        <leasehold.Lease.campaign>`): sets its value, which observers see.
        Raises :class:`~leasehold.errors.LockLost` if the lead is already
        lost, :class:`~leasehold.errors.NotHolder` if another leads.
        Returns the revision."""
        revision: int = _wait.result(self._native.proclaim(value))
        return revision

    async def proclaim_async(self, value: str) -> int:
        """:meth:`proclaim` for asyncio."""
        revision: int = await _wait.result_async(self._native.proclaim(value))
        return revision

    def fence(self) -> int:
        """The fencing token if the lock is still ours *now*; raises
        :class:`~leasehold.errors.LockLost` once it is not. Pass the token
        with the write: the resource rejects tokens below its highest."""
        return self._native.fence()

    def on_lost(self, callback: Callable[[LockLost], None]) -> None:
        """Calls ``callback(error)`` from a background thread when the lock
        is taken away (not when this process releases it)."""
        self._native.lost.on_lost(callback)

    def release(self) -> ReleaseOutcome:
        """Releases the lock and says what the server found. Only a
        transport failure raises; the lease then releases it later."""
        if self._released is None:
            raw = _wait.result(self._native.release(), cancellable=False)
            self._released = ReleaseOutcome._from_native(raw)
        return self._released

    async def release_async(self) -> ReleaseOutcome:
        """:meth:`release` for asyncio; completes even if the task is cancelled."""
        if self._released is None:
            call = self._native.release()
            raw = await _wait.result_async(call, shield=True)
            self._released = ReleaseOutcome._from_native(raw)
        return self._released

    def __enter__(self) -> "Guard":
        return self

    def __exit__(self, exc_type: Optional[type], *exc: object) -> None:
        _ending(self.release, exc_type)

    def _cancel_task_on_loss(self) -> None:
        """Arms the cancellation of the running task at the loss."""
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        if task is None:
            return

        def cancel() -> None:
            if self._scope_open and not task.done():
                self._cancelled_by_loss = True
                task.cancel()

        def fire(_error: LockLost) -> None:
            try:
                loop.call_soon_threadsafe(cancel)
            except RuntimeError:
                pass  # the loop is closed

        self._scope_open = True
        self.on_lost(fire)

    async def _close_scope(self, exc: Optional[BaseException]) -> None:
        """Leaves an ``async with``: releases, and turns the loss's
        cancellation into the ``LockLost`` it stands for."""
        self._scope_open = False
        await _ending_async(self.release_async(), None if exc is None else type(exc))
        if self._cancelled_by_loss and isinstance(exc, asyncio.CancelledError):
            task = asyncio.current_task()
            uncancel = getattr(task, "uncancel", None)
            if uncancel is not None:
                uncancel()
            lost = self._native.lost.loss()
            if lost is not None:
                raise lost from exc


class LockRequest:
    """An acquire being set up (``lease.lock(name, ...)``): call
    :meth:`acquire`, ``await`` it, or use it with ``with`` /
    ``async with`` (the lock is released when the block ends)."""

    def __init__(self, lease: "Lease", name: str, options: Dict[str, Any], cancel_on_loss: bool) -> None:
        self._lease = lease
        self._name = name
        self._options = options
        self._cancel_on_loss = cancel_on_loss
        self._guard: Optional[Guard] = None

    def _call(self) -> _native.Call:
        return self._lease._native.acquire(self._name, **self._options)

    def acquire(self) -> Guard:
        """Acquires the lock (waiting up to ``wait`` seconds in its FIFO
        queue); raises :class:`~leasehold.errors.Busy` or
        :class:`~leasehold.errors.WaitTimeout` if it is not had."""
        return Guard(_wait.result(self._call()))

    async def acquire_async(self) -> Guard:
        """:meth:`acquire` for asyncio; cancelling the task cancels the wait."""
        return Guard(await _wait.result_async(self._call()))

    def __await__(self) -> Generator[Any, None, Guard]:
        return self.acquire_async().__await__()

    def __enter__(self) -> Guard:
        self._guard = self.acquire()
        return self._guard

    def __exit__(self, exc_type: Optional[type], *exc: object) -> None:
        if self._guard is not None:
            self._guard.__exit__(exc_type)

    async def __aenter__(self) -> Guard:
        self._guard = await self.acquire_async()
        if self._cancel_on_loss:
            self._guard._cancel_task_on_loss()
        return self._guard

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        if self._guard is not None:
            await self._guard._close_scope(exc)
