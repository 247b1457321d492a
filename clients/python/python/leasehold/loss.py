"""Loss of ownership, as Python expects to wait for it.

:class:`LossEvent` has the shape of :class:`threading.Event` (``is_set()``,
``wait(timeout)``) over a lease or one lock. ``is_set()`` reads the boot
clock *now*: a process that was paused past its lease sees the loss at
once, before the renewal machinery has had a chance to say so.
"""

from __future__ import annotations

import asyncio
from typing import Optional

from leasehold import _native
from leasehold.errors import LockLost

#: How long one blocking slice of :meth:`LossEvent.wait` lasts (Ctrl-C).
_SLICE_S = 0.1


class LossEvent:
    """Set once ownership is gone (taken away, or ended by this process)."""

    def __init__(self, native: _native.Loss) -> None:
        self._native = native

    def is_set(self) -> bool:
        """Whether ownership is gone, read from the clock now."""
        return self._native.loss() is not None

    @property
    def error(self) -> Optional[LockLost]:
        """Why ownership is gone (``None`` while it holds)."""
        return self._native.loss()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Blocks until ownership is gone or ``timeout`` seconds pass;
        returns :meth:`is_set`."""
        remaining = timeout
        while remaining is None or remaining > 0:
            slice_s = _SLICE_S if remaining is None else min(_SLICE_S, remaining)
            if self._native.wait(slice_s):
                return True
            if remaining is not None:
                remaining -= slice_s
        return self.is_set()

    async def wait_async(self) -> LockLost:
        """Waits (without blocking the loop) until ownership is taken away;
        returns why. A release or revoke by this process does not end it."""
        loop = asyncio.get_running_loop()
        lost: asyncio.Future[LockLost] = loop.create_future()

        def fire(error: LockLost) -> None:
            try:
                loop.call_soon_threadsafe(_settle, lost, error)
            except RuntimeError:
                pass  # the loop is closed

        self._native.on_lost(fire)
        return await lost


def _settle(lost: asyncio.Future[LockLost], error: LockLost) -> None:
    if not lost.done():
        lost.set_result(error)
