#!/usr/bin/env bash
# Leasehold beside Redis and etcd on this machine, in one run: a fresh
# single node (durable log), Redis with `appendonly yes, appendfsync always`
# (the setting that makes an acknowledged SET survive a crash, as a
# Leasehold grant does) and a 3-node etcd (scripts/etcd-cluster.sh), each
# loaded by `leasehold bench` with 64 clients for SECONDS (10), ROUNDS (2)
# times; then Leasehold's contended and keep-alive workloads. A benchmark
# aid only: no test or CI run uses it.
#
#   scripts/bench-compare.sh [path/to/leasehold]   # default target/release/leasehold
#
# Needs redis-server, and etcd 3.4 + etcdctl (`apt-get install -y
# redis-server etcd-server etcd-client`). Everything listens on free
# loopback ports and is stopped and deleted at the end.
set -euo pipefail

bin=${1:-target/release/leasehold}
seconds=${SECONDS_PER_RUN:-10}
rounds=${ROUNDS:-2}
here=$(cd "$(dirname "$0")" && pwd)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

dir=$(mktemp -d /tmp/leasehold-compare.XXXXXX)
port=$(free_port)
"$bin" serve --listen "127.0.0.1:$port" --data-dir "$dir/leasehold" >"$dir/serve.log" 2>&1 &
server=$!
redis_port=$(free_port)
mkdir -p "$dir/redis"
redis-server --bind 127.0.0.1 --port "$redis_port" --dir "$dir/redis" --daemonize yes \
    --save '' --appendonly yes --appendfsync always \
    --logfile "$dir/redis.log" --pidfile "$dir/redis.pid"
etcd=$("$here/etcd-cluster.sh" start 24790 | tail -1)
cleanup() {
    kill "$server" 2>/dev/null || true
    [ -f "$dir/redis.pid" ] && kill "$(cat "$dir/redis.pid")" 2>/dev/null || true
    "$here/etcd-cluster.sh" stop 24790 >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT
for _ in $(seq 1 100); do
    curl -s -o /dev/null "http://127.0.0.1:$port/readyz" && break
    sleep 0.1
done

leasehold="http://127.0.0.1:$port"
for round in $(seq 1 "$rounds"); do
    echo "=== round $round"
    "$bin" --endpoints "$leasehold" bench --workload uncontended --clients 64 --seconds "$seconds" --server-pid "$server"
    "$bin" --endpoints "127.0.0.1:$redis_port" bench --target redis --workload uncontended --clients 64 --seconds "$seconds"
    "$bin" --endpoints "$etcd" bench --target etcd --workload uncontended --clients 64 --seconds "$seconds"
    "$bin" --endpoints "$leasehold" bench --workload contended --clients 64 --keys 16 --seconds "$seconds"
    "$bin" --endpoints "$leasehold" bench --workload keepalive --clients 64 --seconds "$seconds"
done
