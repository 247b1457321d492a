"""The test kit of the Python client's tests: real ``leasehold serve``
processes on free loopback ports (one node, or a cluster of three), the
``leasehold`` command line aimed at them, and bounded waiting.

The binary is ``LEASEHOLD_BIN`` (``crates/cli/tests/t180_python_client.rs``
passes the one cargo built), else ``target/debug/leasehold`` of this
repository. Every wait has a deadline; nothing sleeps "long enough".
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, TypeVar

import pytest

REPO = Path(__file__).resolve().parents[3]
#: Bound on a server (or cluster) becoming ready: a leader elected.
START_TIMEOUT_S = 30.0
#: Bound on one command-line call.
CLI_TIMEOUT_S = 30.0

T = TypeVar("T")


def binary() -> str:
    """The ``leasehold`` binary under test."""
    found = os.environ.get("LEASEHOLD_BIN") or str(REPO / "target" / "debug" / "leasehold")
    if not Path(found).is_file():
        pytest.fail(f"no leasehold binary at {found}: run `cargo build -p leasehold-cli` or set LEASEHOLD_BIN")
    return found


def free_port() -> int:
    """A port nobody listens on now (the kernel's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for(what: str, timeout_s: float, probe: Callable[[], Optional[T]], every_s: float = 0.05) -> T:
    """Polls ``probe`` until it returns something other than ``None``;
    fails the test naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = probe()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(every_s)


def unique(prefix: str) -> str:
    """A lock name no other test uses."""
    return f"{prefix}/{uuid.uuid4().hex[:12]}"


class Node:
    """One ``leasehold serve`` process."""

    def __init__(self, args: List[str], log: Path) -> None:
        self.args = args
        self.log = log
        self.process: Optional[subprocess.Popen[bytes]] = None

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [binary(), "serve", *self.args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                env={**os.environ, "RUST_LOG": "info,openraft=warn", "NO_COLOR": "1"},
            )

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None


class Service:
    """A running service: its endpoints and its command line (which runs
    with ``cli_env``: TLS files, a token)."""

    def __init__(self, nodes: Dict[int, Node], endpoints: Dict[int, str], workdir: Path, cli_env: Dict[str, str]) -> None:
        self.nodes = nodes
        self.endpoints_by_node = endpoints
        self.workdir = workdir
        self.cli_env = cli_env

    @property
    def endpoints(self) -> List[str]:
        """Every live node's endpoint."""
        return [e for n, e in self.endpoints_by_node.items() if self.nodes[n].process is not None]

    @property
    def endpoint(self) -> str:
        return self.endpoints[0]

    def cli(self, *args: str, check: bool = True, timeout_s: float = CLI_TIMEOUT_S) -> "subprocess.CompletedProcess[str]":
        """Runs ``leasehold --endpoints ... ARGS`` to completion."""
        run = subprocess.run(
            [binary(), *args, "--endpoints", ",".join(self.endpoints)],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env={**os.environ, **self.cli_env},
        )
        if check and run.returncode != 0:
            pytest.fail(f"leasehold {' '.join(args)} exited {run.returncode}: {run.stderr}")
        return run

    def cli_json(self, *args: str) -> Any:
        return json.loads(self.cli(*args, "--json").stdout)

    def leader(self) -> int:
        """The node id of the agreed leader, waiting until there is one."""

        def agreed() -> Optional[int]:
            run = self.cli("--timeout", "1s", "status", "--json", check=False, timeout_s=10)
            if run.returncode != 0:
                return None
            leader = int(json.loads(run.stdout).get("leader") or 0)
            return leader or None

        return wait_for("a leader", START_TIMEOUT_S, agreed, every_s=0.2)

    def logs(self) -> str:
        return "\n".join(f"--- node {n} ---\n{node.log.read_text(errors='replace')[-4000:]}" for n, node in self.nodes.items())

    def stop(self) -> None:
        for node in self.nodes.values():
            node.kill()


def start_service(
    nodes: int, serve_args: Sequence[str] = (), scheme: str = "http", cli_env: Optional[Dict[str, str]] = None
) -> Service:
    """Starts ``nodes`` nodes (with ``serve_args`` each) and waits for a leader."""
    workdir = Path(tempfile.mkdtemp(prefix="leasehold-py-"))
    listens = {n: f"127.0.0.1:{free_port()}" for n in range(1, nodes + 1)}
    peers = ",".join(f"{n}={addr}" for n, addr in listens.items())
    started: Dict[int, Node] = {}
    for n, listen in listens.items():
        args = ["--listen", listen, "--data-dir", str(workdir / f"node-{n}"), *serve_args]
        if nodes > 1:
            args += ["--node-id", str(n), "--peers", peers]
        started[n] = Node(args, workdir / f"node-{n}.log")
        started[n].start()
    service = Service(started, {n: f"{scheme}://{a}" for n, a in listens.items()}, workdir, dict(cli_env or {}))
    try:
        service.leader()
    except BaseException:
        print(service.logs())
        service.stop()
        raise
    return service


@pytest.fixture(scope="module")
def server() -> Iterator[Service]:
    """One single-node server, shared by a module's tests (each uses its own lock names)."""
    service = start_service(1)
    yield service
    service.stop()
    shutil.rmtree(service.workdir, ignore_errors=True)


@pytest.fixture
def cluster() -> Iterator[Service]:
    """A fresh three-node cluster."""
    service = start_service(3)
    yield service
    service.stop()
    shutil.rmtree(service.workdir, ignore_errors=True)


@pytest.fixture
def client(server: Service) -> Any:
    import leasehold

    return leasehold.Client(server.endpoint)


def required_env(variable: str, what: str) -> str:
    """``$variable`` (a database's address, a directory), or: fail under
    ``CI=true`` (a CI run that quietly skipped would be a test that can't
    fail), skip loudly elsewhere."""
    value = os.environ.get(variable)
    if value:
        return value
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {variable} ({what}) is not set: .ci/run must provide it")
    reason = f"!!!!!!!! SKIPPING: {variable} ({what}) is not set; run .ci/run once, or set it !!!!!!!!"
    warnings.warn(reason)
    pytest.skip(reason)


@pytest.fixture
def postgres_dsn() -> str:
    """The test PostgreSQL, as a libpq connection string."""
    return required_env("LEASEHOLD_TEST_POSTGRES", "a libpq connection string")


@pytest.fixture
def tls_dir() -> Path:
    """Certificates made by t180 (``ca.crt``, ``server.crt``/``.key``,
    ``alice.crt``/``.key``, ``bob.crt``/``.key``)."""
    return Path(required_env("LEASEHOLD_TEST_TLS_DIR", "certificates, which t180_python_client makes"))


@pytest.fixture
def redis_address() -> str:
    """The test Redis, as ``host:port``."""
    return required_env("LEASEHOLD_TEST_REDIS", "host:port of a redis-server")
