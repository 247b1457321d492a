"""An invoice worker: takes the lock for a month's invoices and writes each
batch to PostgreSQL, fenced by the lock's token, so that a worker that was
paused past its lease (and lost the lock to another) cannot write late.

    pip install ./clients/python 'psycopg[binary]'
    leasehold serve &                      # or point --endpoints at your cluster
    python clients/python/examples/worker.py --postgres "host=127.0.0.1 dbname=app user=app"

Exit codes: 0 done, 3 the lock was busy, 6 the lock was lost mid-way.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, List, Optional

import psycopg

import leasehold
from leasehold.fence.postgres import fenced_transaction, migrate

EXIT_BUSY = 3
EXIT_LOST = 6


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--endpoints", default=None, help="Leasehold endpoints (default: LEASEHOLD_ENDPOINTS or http://127.0.0.1:7420)")
    parser.add_argument("--postgres", required=True, help="libpq connection string of the database to write")
    parser.add_argument("--month", default="2026-11")
    parser.add_argument("--batches", type=int, default=5)
    args = parser.parse_args(argv)

    client = leasehold.Client(args.endpoints)
    lock = f"billing/invoices/{args.month}"
    with psycopg.connect(args.postgres, autocommit=True) as conn:
        migrate(conn)
        conn.execute("CREATE TABLE IF NOT EXISTS invoice_batches (month text, batch int, token bigint)")
        try:
            with client.lease(ttl=10, owner="invoice-worker") as lease:
                with lease.lock(lock, wait=5, fenced=True) as guard:
                    for batch in range(args.batches):
                        write_batch(conn, lock, args.month, batch, guard.fence())
        except (leasehold.Busy, leasehold.WaitTimeout) as busy:
            print(f"worker: {busy}", file=sys.stderr)
            return EXIT_BUSY
        except (leasehold.LockLost, leasehold.StaleToken) as lost:
            print(f"worker: stopped, the lock is no longer ours: {lost}", file=sys.stderr)
            return EXIT_LOST
    return 0


def write_batch(conn: "psycopg.Connection[Any]", lock: str, month: str, batch: int, token: int) -> None:
    """One batch, in a transaction whose first statement checks the token."""
    with fenced_transaction(conn, "invoice_batches", lock, token):
        conn.execute("INSERT INTO invoice_batches (month, batch, token) VALUES (%s, %s, %s)", (month, batch, token))
    print(f"batch {batch} of {month} written under token {token}")


if __name__ == "__main__":
    sys.exit(main())
