"""Leasehold's Python client: locks with fencing tokens whose renewal
Python cannot starve.

The lease keeper, the boot-clock deadline, failover and request ids are the
Rust client library's (``leasehold-client``), running on threads of its own
that never take the GIL: renewal and loss detection go on while Python
holds the GIL, blocks its event loop, or sits in a long C call. A paused
*process* still loses its lease honestly: the boot clock counts the pause,
and :meth:`Guard.fence` raises :class:`LockLost` before the next write.

::

    import leasehold

    client = leasehold.Client(["http://127.0.0.1:7420"])
    with client.lease(ttl=10, owner="invoice-worker") as lease:
        with lease.lock("billing/invoices/2026-11", wait=5, fenced=True) as guard:
            token = guard.fence()       # raises LockLost once ownership is gone
            store.write(batch, fence_token=token)

The protected resource must still check the token (reject any below the
highest it has accepted): ``leasehold.fence.postgres`` and
``leasehold.fence.redis`` do that for PostgreSQL and Redis.
"""

from leasehold._native import __version__
from leasehold.client import DEFAULT_ENDPOINT, Client, Holder
from leasehold.election import Leader, LeaderChange, Observer
from leasehold.errors import (
    AlreadyHeld,
    Busy,
    Internal,
    InvalidArgument,
    LeaseExpired,
    LeaseholdError,
    LeaseNotFound,
    LockLost,
    NoSuchLock,
    NotHolder,
    NotLeader,
    PermissionDenied,
    ResourceExhausted,
    ServerError,
    StaleToken,
    Timeout,
    Unauthenticated,
    Unavailable,
    Unfenced,
    WaitTimeout,
)
from leasehold.guard import Guard, LockRequest
from leasehold.lease import Lease, LeaseRequest
from leasehold.lock import Lock
from leasehold.loss import LossEvent
from leasehold.outcome import ReleaseOutcome, ReleaseStatus

__all__ = [
    "__version__",
    "DEFAULT_ENDPOINT",
    "Client",
    "Holder",
    "Leader",
    "LeaderChange",
    "Observer",
    "Lease",
    "LeaseRequest",
    "Guard",
    "LockRequest",
    "Lock",
    "LossEvent",
    "ReleaseOutcome",
    "ReleaseStatus",
    "LeaseholdError",
    "AlreadyHeld",
    "Busy",
    "Internal",
    "InvalidArgument",
    "LeaseExpired",
    "LeaseNotFound",
    "LockLost",
    "NoSuchLock",
    "NotHolder",
    "NotLeader",
    "PermissionDenied",
    "ResourceExhausted",
    "ServerError",
    "StaleToken",
    "Timeout",
    "Unauthenticated",
    "Unavailable",
    "Unfenced",
    "WaitTimeout",
]
