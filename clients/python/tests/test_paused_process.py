"""A paused process loses honestly. The holder process is SIGSTOPped past
its ttl; meanwhile a second client gets the lock with a higher token and
writes. After SIGCONT, the holder's ``fence()`` raises, ``lost`` is set,
and its late write with the old token is refused by the PostgreSQL fence."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import psycopg

import leasehold
from leasehold.fence.postgres import fenced_transaction, migrate

from conftest import Service, unique

HOLDER = Path(__file__).with_name("paused_holder.py")


def read_json_line(process: "subprocess.Popen[str]") -> Dict[str, Any]:
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line, f"the holder printed nothing; stderr: {process.stderr.read() if process.stderr else ''}"
    found: Dict[str, Any] = json.loads(line)
    return found


def test_a_paused_holder_loses_and_its_late_write_is_refused(
    server: Service, client: leasehold.Client, postgres_dsn: str
) -> None:
    lock = unique("paused")
    resource = unique("ledger")
    table = "py_paused_" + resource.split("/")[1]
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        migrate(conn)
        conn.execute(f"CREATE TABLE {table} (token bigint, what text)")
        holder = subprocess.Popen(
            [sys.executable, str(HOLDER), server.endpoint, lock, resource, table, postgres_dsn],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            first = read_json_line(holder)["token"]
            os.kill(holder.pid, signal.SIGSTOP)
            # The lease (ttl 2 s) expires during the pause; the lock passes on.
            with client.lease(ttl=10) as lease, lease.lock(lock, wait=15, fenced=True) as guard:
                second = guard.fence()
                assert second > first
                with fenced_transaction(conn, resource, lock, second):
                    conn.execute(f"INSERT INTO {table} (token, what) VALUES (%s, %s)", (second, "new holder"))
                os.kill(holder.pid, signal.SIGCONT)
                assert holder.stdin is not None
                holder.stdin.write("go\n")
                holder.stdin.flush()
                report = read_json_line(holder)
            assert holder.wait(timeout=30) == 0
        finally:
            if holder.poll() is None:
                os.kill(holder.pid, signal.SIGCONT)
                holder.kill()
        assert report["fence"] == "raised", report
        assert report["cause"] in ("deadline_reached", "lease_expired", "lease_not_found"), report
        assert report["lost_set"] is True
        assert report["late_write"] == "refused" and report["highest"] == second, report
        rows = conn.execute(f"SELECT token, what FROM {table} ORDER BY token").fetchall()
        assert rows == [(first, "before the pause"), (second, "new holder")]
        conn.execute(f"DROP TABLE {table}")
