"""The :class:`Client`: one connection to a Leasehold cluster, shared by
every lease and lock made from it. Its settings are the command line's:
endpoints with failover, TLS files and a bearer token, each also read from
the same environment variables (``LEASEHOLD_ENDPOINTS``,
``LEASEHOLD_CACERT``, ``LEASEHOLD_CERT``, ``LEASEHOLD_KEY``,
``LEASEHOLD_AUTH_TOKEN``) when not passed."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Sequence, Union

from leasehold import _native, _wait
from leasehold.election import Leader, Observer, leader_of
from leasehold.lease import LeaseRequest
from leasehold.lock import Lock

#: Where the service listens when nothing else is said (``leasehold serve``).
DEFAULT_ENDPOINT = "http://127.0.0.1:7420"

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Holder:
    """Who holds a lock now."""

    lease: int
    token: int


class Client:
    """A client of one Leasehold cluster.

    ``endpoints``: ``http://host:port`` (or ``https://`` with ``cacert``);
    the first that answers is used, the others are failover targets.
    Connecting happens here; use :meth:`connect_async` from asyncio code.
    """

    def __init__(
        self,
        endpoints: Union[str, Sequence[str], None] = None,
        *,
        cacert: Optional[PathLike] = None,
        cert: Optional[PathLike] = None,
        key: Optional[PathLike] = None,
        auth_token: Optional[str] = None,
        call_timeout: Optional[float] = None,
        connect_timeout: Optional[float] = None,
        retry_budget: Optional[float] = None,
        _native_client: Optional[_native.Client] = None,
    ) -> None:
        if _native_client is None:
            how = _settings(endpoints, cacert, cert, key, auth_token, call_timeout, connect_timeout, retry_budget)
            _native_client = _wait.result(_native.Client.connect(how))
        self._native: _native.Client = _native_client

    @classmethod
    async def connect_async(
        cls,
        endpoints: Union[str, Sequence[str], None] = None,
        *,
        cacert: Optional[PathLike] = None,
        cert: Optional[PathLike] = None,
        key: Optional[PathLike] = None,
        auth_token: Optional[str] = None,
        call_timeout: Optional[float] = None,
        connect_timeout: Optional[float] = None,
        retry_budget: Optional[float] = None,
    ) -> "Client":
        """Connects without blocking the event loop."""
        how = _settings(endpoints, cacert, cert, key, auth_token, call_timeout, connect_timeout, retry_budget)
        native = await _wait.result_async(_native.Client.connect(how))
        return cls(_native_client=native)

    @property
    def endpoint(self) -> str:
        """The endpoint in use now."""
        return self._native.endpoint()

    def lease(
        self,
        ttl: float = 10.0,
        *,
        owner: Optional[str] = None,
        labels: Optional[Mapping[str, str]] = None,
        keep_alive_interval: Optional[float] = None,
        margin: Optional[float] = None,
    ) -> LeaseRequest:
        """A lease of ``ttl`` seconds, renewed every ``keep_alive_interval``
        (default ttl/3) and counted lost ``margin`` (default ttl/10) before
        its server-side expiry. ``owner`` is the name operators see."""
        options: Dict[str, Any] = {
            "ttl": ttl,
            "owner": owner,
            "labels": sorted((labels or {}).items()),
            "keep_alive_interval": keep_alive_interval,
            "margin": margin,
        }
        return LeaseRequest(self, options)

    def lock(
        self,
        name: str,
        *,
        ttl: float = 10.0,
        fenced: bool = False,
        owner: Optional[str] = None,
    ) -> Lock:
        """A lock with the shape of :class:`threading.Lock` (``acquire``,
        ``release``, ``locked``, ``with``): each acquire grants its own
        lease of ``ttl`` seconds, each release revokes it."""
        return Lock(self, name, ttl=ttl, fenced=fenced, owner=owner)

    def holder(self, name: str) -> Optional[Holder]:
        """Who holds ``name`` now (``None``: nobody)."""
        found = _wait.result(self._native.holder(name))
        return None if found is None else Holder(*found)

    async def holder_async(self, name: str) -> Optional[Holder]:
        """:meth:`holder` for asyncio."""
        found = await _wait.result_async(self._native.holder(name))
        return None if found is None else Holder(*found)

    def leader(self, election: str) -> Optional[Leader]:
        """Who leads ``election`` now (``None``: nobody)."""
        return leader_of(_wait.result(self._native.leader(election)))

    async def leader_async(self, election: str) -> Optional[Leader]:
        """:meth:`leader` for asyncio."""
        return leader_of(await _wait.result_async(self._native.leader(election)))

    def observe(self, election: str) -> Observer:
        """Follows ``election``: its leader now, then every change."""
        return Observer(_wait.result(self._native.observe(election)))

    async def observe_async(self, election: str) -> Observer:
        """:meth:`observe` for asyncio."""
        return Observer(await _wait.result_async(self._native.observe(election)))


def _settings(
    endpoints: Union[str, Sequence[str], None],
    cacert: Optional[PathLike],
    cert: Optional[PathLike],
    key: Optional[PathLike],
    auth_token: Optional[str],
    call_timeout: Optional[float],
    connect_timeout: Optional[float],
    retry_budget: Optional[float],
) -> Dict[str, Any]:
    """The connect settings, each from its argument or else its
    environment variable (as the command line reads them)."""
    if endpoints is None:
        endpoints = os.environ.get("LEASEHOLD_ENDPOINTS", DEFAULT_ENDPOINT)
    if isinstance(endpoints, str):
        endpoints = [e.strip() for e in endpoints.split(",") if e.strip()]

    def path(value: Optional[PathLike], variable: str) -> Optional[str]:
        chosen = value if value is not None else os.environ.get(variable) or None
        return None if chosen is None else os.fspath(chosen)

    return {
        "endpoints": list(endpoints),
        "cacert": path(cacert, "LEASEHOLD_CACERT"),
        "cert": path(cert, "LEASEHOLD_CERT"),
        "key": path(key, "LEASEHOLD_KEY"),
        "auth_token": auth_token if auth_token is not None else os.environ.get("LEASEHOLD_AUTH_TOKEN") or None,
        "call_timeout": call_timeout,
        "connect_timeout": connect_timeout,
        "retry_budget": retry_budget,
    }
