"""What a release found, as the server tells it."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import List, Optional, Tuple


class ReleaseStatus(enum.Enum):
    """How a release ended."""

    #: The lock was ours and is now free (or handed to the next waiter).
    RELEASED = "released"
    #: The lease had already ended, which freed the lock earlier: anything
    #: written after that was unprotected.
    ALREADY_EXPIRED = "already_expired"
    #: The lock is held under another token: someone else owns it now.
    HELD_BY_ANOTHER = "held_by_another"
    #: No such lock exists; ``nearby`` lists names that look like it.
    NO_SUCH_LOCK = "no_such_lock"


@dataclass(frozen=True)
class ReleaseOutcome:
    """A release's result: ``status``, and the holder or near names."""

    status: ReleaseStatus
    #: The current holder's token (``HELD_BY_ANOTHER``), if the server said.
    holder_token: Optional[int] = None
    #: Existing names close to the one released (``NO_SUCH_LOCK``).
    nearby: List[str] = field(default_factory=list)

    @property
    def was_held(self) -> bool:
        """Whether the lock was still ours when released."""
        return self.status is ReleaseStatus.RELEASED

    @classmethod
    def _from_native(cls, raw: Tuple[str, Optional[int], List[str]]) -> "ReleaseOutcome":
        status, holder_token, nearby = raw
        return cls(ReleaseStatus(status), holder_token, list(nearby))
