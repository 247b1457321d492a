"""The README's example, ``examples/worker.py``, runs as documented."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import Service, unique

WORKER = Path(__file__).resolve().parents[1] / "examples" / "worker.py"


def test_the_example_worker_writes_its_batches(server: Service, postgres_dsn: str) -> None:
    month = unique("month").replace("/", "-")
    run = subprocess.run(
        [sys.executable, str(WORKER), "--endpoints", server.endpoint, "--postgres", postgres_dsn,
         "--month", month, "--batches", "3"],
        capture_output=True, text=True, timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("written under token") == 3, run.stdout
