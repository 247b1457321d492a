"""leasehold.fence.redis against a real redis-server.

The server is ``LEASEHOLD_TEST_REDIS`` (``host:port``, which ``.ci/run``
exports). Unset: under ``CI=true`` the tests fail; elsewhere they skip,
loudly. Every test writes its own keys (a uuid), so tests may run in
parallel and again against one server.
"""

from __future__ import annotations

import uuid
from typing import Any, Iterator

import pytest

redis = pytest.importorskip("redis")

from conftest import required_env  # noqa: E402
from leasehold import _native  # noqa: E402
from leasehold.errors import InvalidArgument, StaleToken  # noqa: E402
from leasehold.fence.redis import TOKEN_MAX, RedisFence  # noqa: E402

LOCK = "billing/invoices"


def _addr() -> str:
    """The Redis server to test against."""
    return required_env("LEASEHOLD_TEST_REDIS", "host:port of a redis-server")


def _connect(**options: Any) -> RedisFence:
    host, port = _addr().rsplit(":", 1)
    return RedisFence(host=host, port=int(port), socket_timeout=10, **options)


@pytest.fixture
def store() -> Iterator[RedisFence]:
    """A fenced client (replies as bytes)."""
    client = _connect()
    yield client
    client.close()


@pytest.fixture
def key() -> str:
    """A data key no other test (or run) writes."""
    return f"fence-test:{uuid.uuid4()}"


def test_the_first_write_and_higher_ones_are_accepted(store: RedisFence, key: str) -> None:
    assert store.highest(key, LOCK) is None
    store.fenced_set(key, LOCK, 3, "three")
    assert store.get(key) == b"three"
    store.fenced_set(key, LOCK, 8, b"eight")
    assert store.get(key) == b"eight"
    assert store.highest(key, LOCK) == 8
    assert store.rejections(key) == []


def test_an_equal_token_is_accepted(store: RedisFence, key: str) -> None:
    store.fenced_hset(key, LOCK, 5, "a", "1")
    store.fenced_hset(key, LOCK, 5, "b", 2)
    assert store.hgetall(key) == {b"a": b"1", b"b": b"2"}
    assert store.highest(key, LOCK) == 5


def test_a_stale_token_writes_nothing_and_its_refusal_is_recorded(store: RedisFence, key: str) -> None:
    store.fenced_set(key, LOCK, 7, "seven")
    with pytest.raises(StaleToken) as refused:
        store.fenced_set(key, LOCK, 5, "five")
    error = refused.value
    assert (error.key, error.lock, error.presented, error.highest) == (key, LOCK, 5, 7)
    assert error.reason == "StaleToken" and "stale token 5" in str(error)
    assert store.get(key) == b"seven"
    assert store.highest(key, LOCK) == 7
    [rejection] = store.rejections(key)
    assert (rejection.resource, rejection.lock) == (key, LOCK)
    assert (rejection.presented, rejection.highest) == (5, 7)
    assert rejection.at_unix_ms > 0


def test_a_stale_delete_deletes_nothing_and_the_fence_outlives_the_data(
    store: RedisFence, key: str
) -> None:
    store.fenced_set(key, LOCK, 4, "v")
    with pytest.raises(StaleToken):
        store.fenced_delete(key, LOCK, 3)
    assert store.get(key) == b"v"
    store.fenced_delete(key, LOCK, 6)
    assert store.get(key) is None
    with pytest.raises(StaleToken):
        store.fenced_set(key, LOCK, 5, "late")
    assert store.get(key) is None
    assert [r.presented for r in store.rejections(key)] == [5, 3]
    assert [r.presented for r in store.rejections(key, limit=1)] == [5]


def test_locks_are_fenced_apart(store: RedisFence, key: str) -> None:
    store.fenced_set(key, "lock-a", 9, "a")
    store.fenced_set(key, "lock-b", 1, "b")
    assert (store.highest(key, "lock-a"), store.highest(key, "lock-b")) == (9, 1)


def test_tokens_above_2_to_the_53_are_refused_before_sending(store: RedisFence, key: str) -> None:
    for token in (TOKEN_MAX + 1, 2**64, -1):
        with pytest.raises(InvalidArgument) as refused:
            store.fenced_set(key, LOCK, token, "x")
        assert refused.value.field == "token"
    with pytest.raises(InvalidArgument) as above:
        store.fenced_set(key, LOCK, TOKEN_MAX + 1, "x")
    assert above.value.limit == "TOKEN_MAX", str(above.value)
    assert store.get(key) is None and store.highest(key, LOCK) is None
    store.fenced_set(key, LOCK, TOKEN_MAX, "max")
    assert store.highest(key, LOCK) == TOKEN_MAX


def test_bad_keys_locks_and_values_are_refused_naming_the_limit(store: RedisFence, key: str) -> None:
    cases = [
        ("a}b", LOCK, b"v", "key", None),
        ("", LOCK, b"v", "key", None),
        ("k" * 1025, LOCK, b"v", "key", "KEY_BYTES_MAX"),
        (key, "", b"v", "lock", "NAME_BYTES_MAX"),
        (key, LOCK, b"v" * (16 * 1024 * 1024 + 1), "value", "VALUE_BYTES_MAX"),
    ]
    for bad_key, lock, value, field, limit in cases:
        with pytest.raises(InvalidArgument) as refused:
            store.fenced_set(bad_key, lock, 1, value)
        assert (refused.value.field, refused.value.limit) == (field, limit), str(refused.value)
    with pytest.raises(InvalidArgument):
        store.highest("a}b", LOCK)
    assert store.get(key) is None


def test_the_script_is_loaded_again_after_a_flush(store: RedisFence, key: str) -> None:
    store.fenced_set(key, LOCK, 1, "before")
    store.script_flush()
    store.fenced_set(key, LOCK, 2, "after")
    assert store.get(key) == b"after"


def test_a_failed_write_does_not_raise_the_fence(store: RedisFence, key: str) -> None:
    store.set(key, "a string")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        store.fenced_hset(key, LOCK, 4, "f", "v")
    assert store.highest(key, LOCK) is None


def test_a_fence_of_a_newer_format_is_refused_naming_both(store: RedisFence, key: str) -> None:
    store.fenced_set(key, LOCK, 5, "five")
    fence_key = _native.redis_fence_key(key, LOCK)
    store.set(fence_key, "v2:5;whatever it holds")
    with pytest.raises(redis.ResponseError, match=r"format v2, newer than this adapter reads \(v1\)"):
        store.fenced_set(key, LOCK, 9, "nine")
    with pytest.raises(ValueError, match=r"format v2, newer than this adapter reads \(v1\)"):
        store.highest(key, LOCK)
    assert store.get(key) == b"five"
    assert store.get(fence_key) == b"v2:5;whatever it holds"


def test_decoded_replies_work_too(key: str) -> None:
    client = _connect(decode_responses=True)
    try:
        client.fenced_set(key, LOCK, 6, "six")
        with pytest.raises(StaleToken):
            client.fenced_set(key, LOCK, 2, "two")
        assert client.get(key) == "six"
        assert client.highest(key, LOCK) == 6
        assert [(r.presented, r.highest) for r in client.rejections(key)] == [(2, 6)]
    finally:
        client.close()
