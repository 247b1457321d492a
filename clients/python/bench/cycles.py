"""Acquire + release cycles through the Python client, for comparison with
``leasehold bench`` (the same cycle through the Rust client library).

    python clients/python/bench/cycles.py --endpoints http://127.0.0.1:7420 --cycles 2000 [--threads 1] [--asyncio]

Each worker holds one lease and acquires and releases its own lock in a
loop (uncontended), so the figure is the client path's cost: the Python
layer, the wait for the native call, and the server round trip. Prints one
JSON object: cycles/s and latency percentiles in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time
import uuid
from typing import List

import leasehold


def worker_sync(client: leasehold.Client, cycles: int, latencies: List[float]) -> None:
    name = f"bench/py/{uuid.uuid4().hex[:8]}"
    with client.lease(ttl=30) as lease:
        for _ in range(cycles):
            started = time.perf_counter()
            guard = lease.lock(name).acquire()
            guard.release()
            latencies.append(time.perf_counter() - started)


async def worker_async(client: leasehold.Client, cycles: int, latencies: List[float]) -> None:
    name = f"bench/py/{uuid.uuid4().hex[:8]}"
    async with client.lease(ttl=30) as lease:
        for _ in range(cycles):
            started = time.perf_counter()
            guard = await lease.lock(name)
            await guard.release_async()
            latencies.append(time.perf_counter() - started)


def percentile(sorted_values: List[float], p: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(p * len(sorted_values)))] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--endpoints", default=None)
    parser.add_argument("--cycles", type=int, default=2000, help="per worker")
    parser.add_argument("--threads", type=int, default=1, help="workers (threads, or tasks with --asyncio)")
    parser.add_argument("--asyncio", action="store_true")
    args = parser.parse_args()
    client = leasehold.Client(args.endpoints)
    latencies: List[float] = []
    started = time.perf_counter()
    if args.asyncio:

        async def run_all() -> None:
            await asyncio.gather(*(worker_async(client, args.cycles, latencies) for _ in range(args.threads)))

        asyncio.run(run_all())
    else:
        threads = [threading.Thread(target=worker_sync, args=(client, args.cycles, latencies)) for _ in range(args.threads)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    elapsed = time.perf_counter() - started
    latencies.sort()
    print(json.dumps({
        "mode": "asyncio" if args.asyncio else "threads",
        "workers": args.threads,
        "cycles": len(latencies),
        "cycles_per_s": round(len(latencies) / elapsed),
        "p50_ms": round(percentile(latencies, 0.50), 3),
        "p99_ms": round(percentile(latencies, 0.99), 3),
        "max_ms": round(latencies[-1] * 1000, 3),
    }))


if __name__ == "__main__":
    main()
