"""Fencing where Python programs keep their data.

A lock service can only promise that its *lock table* has one holder; a
holder paused past its lease may still write. The store closes that gap:
for each (resource, lock) it remembers the highest fencing token it has
accepted and refuses a write with a lower one, in the same atomic step as
the write. These adapters apply that rule with the very SQL and Lua the
Rust adapters (``leasehold-fence``) run, taken from the native module, so
Rust and Python writers fence each other through the same tables and keys:

- :mod:`leasehold.fence.postgres` (psycopg 3): :func:`~leasehold.fence.postgres.fenced_transaction`.
- :mod:`leasehold.fence.redis` (redis-py): :class:`~leasehold.fence.redis.RedisFence`.

A refused write raises :class:`leasehold.errors.StaleToken`; equal tokens
are accepted (the same holder writing again). Import the submodule you
need: each requires its driver (``pip install 'leasehold[postgres]'`` or
``'leasehold[redis]'``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Rejection"]


@dataclass(frozen=True)
class Rejection:
    """One refused (stale) write, as a store recorded it."""

    resource: str
    """The resource written to: a PostgreSQL fence's resource name, a Redis data key."""
    lock: str
    """The lock whose token was refused."""
    presented: int
    """The token the stale writer presented."""
    highest: int
    """The highest token the resource had accepted at that moment."""
    at_unix_ms: int
    """When the store recorded the refusal (its own clock), Unix milliseconds."""
