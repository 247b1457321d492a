"""A worker for test_paused_process.py, run as its own process so the test
can SIGSTOP it: it takes the lock (ttl 2 s, fenced), writes one row to
PostgreSQL fenced by its token, prints ``{"token": N}``, then waits for a
line on stdin. After it, it reports (one JSON line) what a paused holder
sees on waking: whether ``fence()`` raised and why, whether ``lost`` is
set, and what happened to a late write sent with its old token anyway.

Usage: paused_holder.py ENDPOINT LOCK RESOURCE TABLE POSTGRES_DSN
"""

from __future__ import annotations

import json
import sys
from typing import Any, Dict

import psycopg

import leasehold
from leasehold.fence.postgres import fenced_transaction


def write(conn: "psycopg.Connection[Any]", resource: str, lock: str, table: str, token: int, what: str) -> None:
    with fenced_transaction(conn, resource, lock, token):
        conn.execute(f"INSERT INTO {table} (token, what) VALUES (%s, %s)", (token, what))


def main() -> None:
    endpoint, lock, resource, table, dsn = sys.argv[1:6]
    client = leasehold.Client(endpoint)
    report: Dict[str, Any] = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        lease = client.lease(ttl=2).grant()
        guard = lease.lock(lock, fenced=True).acquire()
        token = guard.fence()
        write(conn, resource, lock, table, token, "before the pause")
        print(json.dumps({"token": token}), flush=True)
        sys.stdin.readline()  # SIGSTOP arrives meanwhile; SIGCONT, then a line
        try:
            guard.fence()
            report["fence"] = "returned"
        except leasehold.LockLost as lost:
            report["fence"] = "raised"
            report["cause"] = lost.cause
        report["lost_set"] = guard.lost.is_set()
        try:
            write(conn, resource, lock, table, token, "late write after the pause")
            report["late_write"] = "accepted"
        except leasehold.StaleToken as stale:
            report["late_write"] = "refused"
            report["highest"] = stale.highest
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
