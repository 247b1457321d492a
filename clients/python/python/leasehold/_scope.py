"""Ending a lease or lock as its ``with`` block closes."""

from __future__ import annotations

from typing import Awaitable, Callable, Optional

from leasehold.errors import LeaseholdError


def _ending(end: Callable[[], object], exc_type: Optional[type]) -> None:
    """Ends a lease or lock as a ``with`` block closes. If the block
    already raised, a failure to reach the server must not hide that
    error: the server frees the lease at its expiry anyway."""
    try:
        end()
    except LeaseholdError:
        if exc_type is None:
            raise


async def _ending_async(end: Awaitable[object], exc_type: Optional[type]) -> None:
    """:func:`_ending` for ``async with``."""
    try:
        await end
    except LeaseholdError:
        if exc_type is None:
            raise
