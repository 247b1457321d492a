"""A distributed lock with the shape of :class:`threading.Lock`, for
drop-in use: ``acquire(blocking=True, timeout=-1)``, ``release()``,
``locked()`` and ``with lock:``. Each acquire grants a lease of its own
(renewed on the native runtime while held) and each release revokes it.
Unlike ``threading.Lock`` it also has :meth:`Lock.fence`: pass the token
to the protected resource with every write."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Tuple

from leasehold import _native
from leasehold.errors import Busy, WaitTimeout
from leasehold.guard import Guard
from leasehold.lease import Lease
from leasehold.loss import LossEvent
from leasehold.outcome import ReleaseOutcome

if TYPE_CHECKING:
    from leasehold.client import Client


class Lock:
    """``client.lock(name, ttl=...)``; see the module doc."""

    def __init__(self, client: "Client", name: str, *, ttl: float, fenced: bool, owner: Optional[str]) -> None:
        self._client = client
        self.name = name
        """The lock's name."""
        self._ttl = ttl
        self._fenced = fenced
        self._owner = owner
        self._held: Optional[Tuple[Lease, Guard]] = None

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """Acquires the lock: at once (``blocking=False``), within
        ``timeout`` seconds, or waiting as long as it takes (``-1``).
        Returns whether it was acquired, as ``threading.Lock`` does."""
        if self._held is not None:
            raise RuntimeError(f"this Lock object already holds {self.name}; release it first")
        if not blocking and timeout != -1:
            raise ValueError("can't specify a timeout for a non-blocking call")
        if blocking and timeout < 0 and timeout != -1:
            raise ValueError("timeout value must be a non-negative number (or -1: no bound)")
        lease = self._client.lease(self._ttl, owner=self._owner).grant()
        try:
            guard = self._wait_for(lease, blocking, timeout)
        except BaseException:
            lease.revoke()
            raise
        if guard is None:
            lease.revoke()
            return False
        self._held = (lease, guard)
        return True

    def _wait_for(self, lease: Lease, blocking: bool, timeout: float) -> Optional[Guard]:
        """Queues for the lock; without a bound, in turns of the server's
        longest wait."""
        while True:
            wait = 0.0 if not blocking else _native.WAIT_MAX_S if timeout == -1 else timeout
            try:
                return lease.lock(self.name, wait=wait, fenced=self._fenced).acquire()
            except Busy:
                return None
            except WaitTimeout:
                if timeout != -1:
                    return None

    def release(self) -> ReleaseOutcome:
        """Releases the lock and revokes its lease; raises ``RuntimeError``
        if this object does not hold it (as ``threading.Lock`` does)."""
        if self._held is None:
            raise RuntimeError(f"release of {self.name}, which this Lock object does not hold")
        lease, guard = self._held
        self._held = None
        try:
            return guard.release()
        finally:
            lease.revoke()

    def locked(self) -> bool:
        """Whether anyone holds the lock now (asks the server)."""
        return self._client.holder(self.name) is not None

    def fence(self) -> int:
        """The fencing token if this object holds the lock *now*; raises
        :class:`~leasehold.errors.LockLost` once it does not."""
        return self._guard().fence()

    @property
    def lost(self) -> LossEvent:
        """The held lock's loss event."""
        return self._guard().lost

    def _guard(self) -> Guard:
        if self._held is None:
            raise RuntimeError(f"this Lock object does not hold {self.name}; acquire() it first")
        return self._held[1]

    def __enter__(self) -> "Lock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
