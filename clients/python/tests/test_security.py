"""TLS and tokens, as the command line takes them. An mTLS server makes
``alice`` (by certificate) its admin; she lets role ``dev`` lock under
``jobs/``, makes ``bob`` a dev and turns auth on. Through the Python client:
bob's certificate locks under ``jobs/`` and is refused elsewhere
(``PermissionDenied`` naming him); bob's token names the caller even over a
connection made with alice's certificate; a plaintext client at the TLS
port is told the server speaks TLS; a host past its share of connections
is told the limit that refused it."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Dict, Iterator, Optional

import pytest

import leasehold

from conftest import Service, start_service, unique, wait_for


def identity(tls_dir: Path, who: str) -> Dict[str, str]:
    return {
        "cacert": str(tls_dir / "ca.crt"),
        "cert": str(tls_dir / f"{who}.crt"),
        "key": str(tls_dir / f"{who}.key"),
    }


def connect_as(service: Service, tls_dir: Path, who: str, auth_token: Optional[str] = None) -> leasehold.Client:
    """A client presenting ``who``'s certificate (and ``auth_token``)."""
    files = identity(tls_dir, who)
    return leasehold.Client(
        service.endpoint, cacert=files["cacert"], cert=files["cert"], key=files["key"], auth_token=auth_token
    )


@pytest.fixture
def secured(tls_dir: Path) -> Iterator[Service]:
    alice = identity(tls_dir, "alice")
    serve = [
        "--tls-cert", str(tls_dir / "server.crt"), "--tls-key", str(tls_dir / "server.key"),
        "--tls-client-ca", str(tls_dir / "ca.crt"), "--bootstrap-admin", "alice",
    ]
    cli_env = {f"LEASEHOLD_{k.upper()}": v for k, v in alice.items()}
    service = start_service(1, serve, scheme="https", cli_env=cli_env)
    wait_for("alice to be admin", 10, lambda: True if service.cli("role", "grant", "dev", "jobs/", "lock", check=False).returncode == 0 else None)
    service.cli("user", "add", "bob", "--role", "dev")
    service.cli("auth", "enable")
    yield service
    service.stop()


def test_certificates_and_tokens_name_the_caller(secured: Service, tls_dir: Path) -> None:
    bob = connect_as(secured, tls_dir, "bob")
    with bob.lease(ttl=10) as lease:
        with lease.lock(unique("jobs/py")) as guard:
            assert guard.fence() > 0
        with pytest.raises(leasehold.PermissionDenied) as denied:
            lease.lock(unique("db/py")).acquire()
        assert denied.value.principal == "bob" and denied.value.verb == "lock"
        assert denied.value.reason == "PermissionDenied"

    secret = secured.cli("token", "create", "bob").stdout.strip().split()[-1]
    # alice's certificate opens the connection; bob's token names the caller.
    as_bob = connect_as(secured, tls_dir, "alice", auth_token=secret)
    with as_bob.lease(ttl=10) as lease:
        with pytest.raises(leasehold.PermissionDenied) as denied:
            lease.lock(unique("db/py")).acquire()
        assert denied.value.principal == "bob"


def test_a_plaintext_client_at_a_tls_port_is_told(secured: Service) -> None:
    plain = secured.endpoint.replace("https://", "http://")
    with pytest.raises(leasehold.Unavailable) as refused:
        leasehold.Client(plain, connect_timeout=2, retry_budget=2).lease(ttl=5).grant()
    assert "speaks TLS" in str(refused.value), refused.value


def test_a_host_past_its_share_of_connections_is_told_why() -> None:
    service = start_service(1, ["--connections-per-address", "2", "--handshake-timeout", "60s"])
    host, port = service.endpoint.replace("http://", "").rsplit(":", 1)
    idle = [socket.create_connection((host, int(port))) for _ in range(2)]
    try:
        with pytest.raises(leasehold.Unavailable) as refused:
            leasehold.Client(service.endpoint, connect_timeout=2, retry_budget=2).lease(ttl=5).grant()
        said = str(refused.value)
        assert "refused this connection" in said and "CONNECTIONS_PER_ADDRESS_MAX (2)" in said, said
    finally:
        for sock in idle:
            sock.close()
        service.stop()
