#!/usr/bin/env bash
# A local 3-node etcd cluster on loopback, for comparing `leasehold bench`
# with etcd on the same machine (`leasehold bench --target etcd`). A
# benchmark aid only: no test or CI run uses it.
#
#   scripts/etcd-cluster.sh start [BASE_PORT]   # default 23790
#   scripts/etcd-cluster.sh stop  [BASE_PORT]
#
# Node i (0..2) serves clients on 127.0.0.1:BASE_PORT+i and peers on
# 127.0.0.1:BASE_PORT+10+i. Data, logs and pids live in a fresh temp dir
# (/tmp/leasehold-etcd-BASE_PORT.XXXXXX, recorded in
# /tmp/leasehold-etcd-BASE_PORT.dir); `stop` kills the nodes and deletes it.
# `start` prints the client endpoints, comma-separated, for --endpoints.
#
# Needs etcd 3.4 and etcdctl on PATH: `apt-get install -y etcd-server
# etcd-client` (Debian 12 ships 3.4.23; the Debian package also enables an
# `etcd` systemd service on 2379, which this script neither needs nor uses).
set -euo pipefail

cmd=${1:-}
base=${2:-23790}
marker=/tmp/leasehold-etcd-$base.dir

client_url() { echo "http://127.0.0.1:$((base + $1))"; }
peer_url() { echo "http://127.0.0.1:$((base + 10 + $1))"; }
endpoints() { echo "$(client_url 0),$(client_url 1),$(client_url 2)"; }

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start() {
    command -v etcd >/dev/null || { echo "etcd not found: apt-get install -y etcd-server etcd-client" >&2; exit 1; }
    [[ -e $marker ]] && { echo "already started ($(cat "$marker")); stop it first" >&2; exit 1; }
    for i in 0 1 2; do
        for port in $((base + i)) $((base + 10 + i)); do
            port_free "$port" || { echo "port $port is in use; pick another BASE_PORT" >&2; exit 1; }
        done
    done
    dir=$(mktemp -d "/tmp/leasehold-etcd-$base.XXXXXX")
    echo "$dir" >"$marker"
    cluster="n0=$(peer_url 0),n1=$(peer_url 1),n2=$(peer_url 2)"
    for i in 0 1 2; do
        # setsid: the nodes outlive this script and ignore its terminal's signals.
        setsid etcd --name "n$i" --data-dir "$dir/n$i" \
            --listen-client-urls "$(client_url "$i")" --advertise-client-urls "$(client_url "$i")" \
            --listen-peer-urls "$(peer_url "$i")" --initial-advertise-peer-urls "$(peer_url "$i")" \
            --initial-cluster "$cluster" --initial-cluster-token "leasehold-bench-$base" \
            --initial-cluster-state new --logger zap --log-outputs stderr \
            </dev/null >"$dir/n$i.log" 2>&1 &
        echo $! >"$dir/n$i.pid"
    done
    for _ in $(seq 50); do
        if ETCDCTL_API=3 etcdctl --endpoints "$(endpoints)" endpoint health >/dev/null 2>&1; then
            endpoints
            return
        fi
        sleep 0.2
    done
    echo "the cluster did not become healthy in 10 s; logs in $dir" >&2
    exit 1
}

stop() {
    [[ -e $marker ]] || { echo "no cluster started on base port $base" >&2; exit 1; }
    dir=$(cat "$marker")
    for pid_file in "$dir"/n*.pid; do
        [[ -e $pid_file ]] && kill "$(cat "$pid_file")" 2>/dev/null || true
    done
    for pid_file in "$dir"/n*.pid; do
        [[ -e $pid_file ]] || continue
        pid=$(cat "$pid_file")
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    done
    rm -rf "$dir" "$marker"
}

case $cmd in
start) start ;;
stop) stop ;;
*)
    echo "usage: $0 start|stop [BASE_PORT]" >&2
    exit 2
    ;;
esac
