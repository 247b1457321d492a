"""Leasehold's exceptions: one class per reason a call can fail.

Every exception is a :class:`LeaseholdError` with the sentence the Rust
client wrote (``str(error)``: what happened and what to do) and
``reason``, the server's machine-readable reason (``"Busy"``,
``"NotHolder"``, ...; ``None`` for errors the client finds itself). The
fields of each class are attributes. The native module picks the class
(``clients/python/src/errors.rs``, one table for the whole client).
"""

from __future__ import annotations

import re
from typing import Any, List, Optional

__all__ = [
    "LeaseholdError",
    "InvalidArgument",
    "Busy",
    "WaitTimeout",
    "LeaseNotFound",
    "LeaseExpired",
    "NotHolder",
    "NoSuchLock",
    "AlreadyHeld",
    "ResourceExhausted",
    "Unavailable",
    "NotLeader",
    "Timeout",
    "LockLost",
    "StaleToken",
    "Unfenced",
    "PermissionDenied",
    "Unauthenticated",
    "Internal",
    "ServerError",
]

_LIMIT = re.compile(r"\b[A-Z][A-Z0-9_]*_(?:MAX|MIN)\b")


class LeaseholdError(Exception):
    """A failed Leasehold call. ``str(error)`` says what to do."""

    message: str
    reason: Optional[str]

    def __init__(self, message: str, *, reason: Optional[str] = None, **fields: Any) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        for name, value in fields.items():
            setattr(self, name, value)

    def __reduce__(self) -> Any:
        fields = {k: v for k, v in self.__dict__.items() if k != "message"}
        return (_rebuild, (type(self), self.message, fields))


def _rebuild(cls: "type[LeaseholdError]", message: str, fields: "dict[str, Any]") -> LeaseholdError:
    return cls(message, **fields)


class InvalidArgument(LeaseholdError, ValueError):
    """A value is out of bounds; ``limit`` names the limit crossed (e.g.
    ``"TTL_MS_MAX"``), when there is one."""

    field: str
    detail: str

    @property
    def limit(self) -> Optional[str]:
        """The limit the value crossed, as the server's ``limits`` names it."""
        found = _LIMIT.search(self.detail)
        return found.group(0) if found else None


class Busy(LeaseholdError):
    """The lock is held by another lease and the acquire did not wait."""

    name: str
    holder_token: Optional[int]


class WaitTimeout(LeaseholdError):
    """The lock did not become free within the wait."""

    name: str
    waited: float


class LeaseNotFound(LeaseholdError):
    """The server does not know the lease (revoked, or never granted)."""

    lease: int


class LeaseExpired(LeaseholdError):
    """The lease expired on the server."""

    lease: int


class NotHolder(LeaseholdError):
    """The lock is held under another token than the one presented."""

    name: str
    holder_token: Optional[int]
    lease: Optional[int]
    token: Optional[int]


class NoSuchLock(LeaseholdError):
    """No lock of that name exists; ``nearby`` lists names like it."""

    name: str
    nearby: List[str]


class AlreadyHeld(LeaseholdError):
    """This lease already holds (or is acquiring) the lock through another guard."""

    name: str


class ResourceExhausted(LeaseholdError):
    """A server limit was reached; ``limit`` names it."""

    limit: str


class Unavailable(LeaseholdError, ConnectionError):
    """No endpoint answered within the retry budget."""


class NotLeader(Unavailable):
    """The node that answered does not lead (the client follows the leader
    itself; this surfaces only when the retry budget ran out)."""

    leader: Optional[int]
    leader_addr: Optional[str]


class Timeout(LeaseholdError, TimeoutError):
    """A call got no answer in time (after retries)."""

    call: str
    after: float


class LockLost(LeaseholdError):
    """Ownership is gone: the lock may already be someone else's. Stop
    writing. ``cause`` is a short label (``"lease_expired"``,
    ``"deadline_reached"``, ``"released_by_server"``, ``"lease_not_found"``,
    ``"max_hold_reached"``, ``"revoked"``, ``"released"``, ``"refused"``);
    ``voluntary`` says whether this process ended it itself."""

    lease: int
    lock: Optional[str]
    cause: str
    voluntary: bool


class StaleToken(LeaseholdError):
    """A fenced write carried a token below the highest that has written:
    a newer holder has written since. Nothing was written; stop."""

    key: str
    lock: str
    presented: int
    highest: int


class Unfenced(LeaseholdError):
    """A force release refused: the holder did not declare fencing."""

    name: str


class PermissionDenied(LeaseholdError, PermissionError):
    """The caller's roles do not allow this."""

    principal: str
    verb: str
    prefix: str


class Unauthenticated(LeaseholdError, PermissionError):
    """No identity, or a bad token: pass ``auth_token=``."""


class Internal(LeaseholdError):
    """The server failed on its own account (a bug to report)."""


class ServerError(LeaseholdError):
    """A reason this client does not know (a newer server)."""
