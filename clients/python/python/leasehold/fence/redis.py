"""Fencing in Redis through redis-py: the token check and the write it
guards run in one Lua script, which Redis executes atomically.

The script is ``crates/fence/src/redis/fence.lua`` and its keys and
arguments are built by ``leasehold_fence::redis::invocation``, both from the
native module: the Rust adapter and this one send the same bytes to the
same keys, so each fences the other's writes. The fence (highest token per
(key, lock)) and the rejection log sit beside the data key, in its hash
slot.

Example::

    from leasehold.fence.redis import RedisFence

    store = RedisFence(host="127.0.0.1", port=6379)
    store.fenced_set("invoices/2026-11", guard.name, guard.fence(), payload)
"""

from __future__ import annotations

import logging
from typing import Any, List, Optional, Union

import redis
from redis.typing import EncodableT

from leasehold import _native
from leasehold.fence import Rejection

__all__ = ["TOKEN_MAX", "REJECTIONS_KEPT", "RedisFence"]

TOKEN_MAX: int = _native.REDIS_TOKEN_MAX
"""The highest token this adapter accepts (2**53: the script compares tokens
as Lua numbers, doubles, exact only up to there). Higher ones raise
:class:`~leasehold.errors.InvalidArgument` before anything is sent."""

REJECTIONS_KEPT: int = _native.REDIS_REJECTIONS_KEPT
"""Refused writes kept per data key in Redis (older ones are trimmed)."""

_log = logging.getLogger(__name__)


class RedisFence(redis.Redis):
    """A redis-py client with fenced writes: :meth:`fenced_set`,
    :meth:`fenced_hset` and :meth:`fenced_delete` write only if the token is
    at least the highest accepted for (key, lock), and raise
    :class:`~leasehold.errors.StaleToken` otherwise, having written nothing.

    Constructed like :class:`redis.Redis` (``RedisFence(host=..., port=...)``,
    ``RedisFence.from_url(...)``); every plain command stays available for
    reads and unfenced keys. The fenced methods have names of their own
    rather than replacing ``set``/``delete``: redis-py itself calls those
    (``client[key] = value``, ``Lock``) with their usual arguments. The
    script runs by ``EVALSHA``, loaded again after ``NOSCRIPT`` (a restarted
    or failed-over server), as :meth:`redis.Redis.register_script` does.
    Connect to the node that owns the keys (no cluster redirection).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Takes :class:`redis.Redis`'s arguments."""
        super().__init__(*args, **kwargs)
        self._fence_script = self.register_script(_native.REDIS_SCRIPT)

    def fenced_set(self, key: str, lock: str, token: int, value: EncodableT) -> None:
        """``SET key value`` if ``token`` is at least the highest accepted
        for (``key``, ``lock``)."""
        self._fenced(key, lock, token, "SET", [value])

    def fenced_hset(
        self, key: str, lock: str, token: int, field: EncodableT, value: EncodableT
    ) -> None:
        """``HSET key field value``, fenced like :meth:`fenced_set`."""
        self._fenced(key, lock, token, "HSET", [field, value])

    def fenced_delete(self, key: str, lock: str, token: int) -> None:
        """``DEL key``, fenced like :meth:`fenced_set`: a stale delete
        deletes nothing. The fence stays, so a later lower token is still
        refused after the data is gone."""
        self._fenced(key, lock, token, "DEL", [])

    def highest(self, key: str, lock: str) -> Optional[int]:
        """The highest token accepted for (``key``, ``lock``); ``None`` if
        none has been yet. ``ValueError`` if the fence holds a value of a
        later format than this adapter reads (the sentence names both)."""
        value: Union[bytes, str, None] = self.get(_native.redis_fence_key(key, lock))
        return None if value is None else _native.redis_parse_fence(_bytes(value))

    def rejections(self, key: str, limit: int = 100) -> List[Rejection]:
        """The most recent refused writes to ``key`` (any lock, by any
        client, Rust or Python), newest first: at most ``limit``, and at
        most :data:`REJECTIONS_KEPT` are kept. ``at_unix_ms`` is the Redis
        server's clock at the refusal."""
        log = _native.redis_rejections_key(key)
        limit = min(limit, REJECTIONS_KEPT)
        if limit <= 0:
            return []
        records: List[Union[bytes, str]] = self.lrange(log, 0, limit - 1)
        return [Rejection(*_native.redis_parse_rejection(key, _bytes(r))) for r in records]

    def _fenced(
        self, key: str, lock: str, token: int, op: str, operands: List[EncodableT]
    ) -> None:
        """Runs the script for one write; raises ``StaleToken`` on refusal."""
        # The client's own encoder, so str values follow its `encoding=`
        # (redis-py leaves Encoder.encode unannotated).
        encoder = self.get_encoder()
        encoded: List[bytes] = [
            encoder.encode(operand)  # type: ignore[no-untyped-call]
            for operand in operands
        ]
        keys, args = _native.redis_invocation(key, lock, token, op, encoded)
        reply = self._fence_script(keys=keys, args=args, client=self)
        done, value = reply
        if done == 1:
            return
        highest = int(value)
        # The script's half of the rule, checked here too: refusing a
        # token at or above the highest would be a script bug.
        assert token < highest, f"script refused {token} >= {highest}"
        _log.warning(
            "refused a stale write: key %r, lock %r, token %d below %d", key, lock, token, highest
        )
        raise _native.stale_token(key, lock, token, highest)


def _bytes(value: Union[bytes, str]) -> bytes:
    """A reply as bytes (``decode_responses=True`` makes replies ``str``)."""
    return value.encode() if isinstance(value, str) else value
