#!/usr/bin/env bash
# The scale measurements of docs/DESIGN.md §6d, each against fresh servers on
# free loopback ports, stopped and deleted at the end. A benchmark aid only: no
# test or CI run uses it. BIN is the leasehold binary (default
# target/release/leasehold); LEASES and LOCKS the state's shape.
#
#   scripts/bench-scale.sh rss BIN...     # bench hold against each BIN's server, side by side
#   scripts/bench-scale.sh heap           # heaptrack the server until every lock is held, then SIGKILL it
#   scripts/bench-scale.sh restart        # stop a server holding the state (SIG=TERM|KILL), time its restart
#   scripts/bench-scale.sh catchup        # 3 nodes; node 3 misses the load, then catches up by snapshot
#   scripts/bench-scale.sh waiters BIN... # 100 leases x 1000 locks = 100,000 waits timing out together
#   scripts/bench-scale.sh three-nodes    # uncontended, 3 Leasehold nodes beside 3 etcd nodes
#   scripts/bench-scale.sh storm 'BIN [SERVE ARGS]'...  # mass expiry (ttl TTL, default 10 s), each variant in turn
#   scripts/bench-scale.sh snapshot       # the state held, probes run while snapshots of it are built (SNAP_EVERY entries)
#   scripts/bench-scale.sh allocator 'ENV...'...  # hold under each environment; RSS, glibc malloc_stats, malloc_trim (gdb)
#   scripts/bench-scale.sh throughput '[ENV...] BIN'...  # uncontended, contended, keep-alive; ROUNDS (2) rounds alternating
#
# `heap` needs heaptrack, `three-nodes` etcd 3.4 (see scripts/etcd-cluster.sh).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bin=${BIN:-target/release/leasehold}
leases=${LEASES:-1000}
locks=${LOCKS:-1000}
work=$(mktemp -d /tmp/leasehold-scale.XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
metric() { curl -s "http://$1/metrics" | awk -v m="^$2 " '$0 ~ m {print $2}'; }
rss_of() { awk '/VmRSS/ {printf "%.1f MiB", $2 / 1024}' "/proc/$1/status"; }
since() { echo "$(date +%s.%N) - $1" | bc; }
ready() { until curl -s -o /dev/null "http://$1/readyz"; do sleep 0.1; done; }

# serve BIN ADDR DIR [ARGS...]: starts a server in the background; its pid in $served.
serve() {
    local b=$1 addr=$2 dir=$3
    shift 3
    "$b" serve --listen "$addr" --data-dir "$dir" "$@" >>"$dir.log" 2>&1 &
    served=$!
    pids+=("$served")
}

# hold ADDR PID: runs `bench --workload hold` against ADDR in the background
# and returns once every lock is held (the bench is then paused: its leases
# stay, nothing revokes them); its pid in $holding.
hold() {
    "$bin" --endpoints "http://$1" bench --workload hold --leases "$leases" --locks "$locks" \
        --clients 64 --server-pid "$2" >"$work/bench.out" 2>&1 &
    holding=$!
    pids+=("$holding")
    until [ "$(metric "$1" leasehold_locks)" = "$((leases * locks))" ]; do sleep 1; done
    kill -STOP "$holding"
}

rss() {
    for b in "$@"; do
        local addr="127.0.0.1:$(free_port)" dir="$work/rss-$RANDOM"
        serve "$b" "$addr" "$dir"
        ready "$addr"
        echo "== $b ($leases x $locks)"
        "$bin" --endpoints "http://$addr" bench --workload hold --leases "$leases" --locks "$locks" \
            --clients 64 --server-pid "$served"
        kill "$served"
        wait "$served" 2>/dev/null || true
    done
}

heap() {
    local addr="127.0.0.1:$(free_port)"
    heaptrack -o "$work/heap" "$bin" serve --listen "$addr" --data-dir "$work/data" >"$work/serve.log" 2>&1 &
    pids+=("$!")
    ready "$addr"
    local pid
    pid=$(pgrep -f "^[^ ]*leasehold serve --listen $addr" | head -1)
    hold "$addr" "$pid"
    sleep "${SETTLE:-8}"
    echo "every lock held; server RSS $(rss_of "$pid"); SIGKILL, so heaptrack's leaks are what was live"
    kill -9 "$pid"
    sleep 5
    cp "$work"/heap*.zst . && echo "profile: $(ls heap*.zst) (heaptrack_print -f FILE -F folded.txt --flamegraph-cost-type leaked)"
}

restart() {
    local addr="127.0.0.1:$(free_port)" dir="$work/data"
    serve "$bin" "$addr" "$dir"
    ready "$addr"
    hold "$addr" "$served"
    sleep "${SETTLE:-15}"
    echo "== $((leases * locks)) locks held, RSS $(rss_of "$served"); stopping with SIG${SIG:-TERM}"
    local t0
    t0=$(date +%s.%N)
    kill "-${SIG:-TERM}" "$served"
    wait "$served" 2>/dev/null || true
    echo "stopped in $(since "$t0") s; data dir $(du -sm "$dir" | cut -f1) MB"
    t0=$(date +%s.%N)
    serve "$bin" "$addr" "$dir"
    until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/readyz")" = 200 ]; do sleep 0.02; done
    local ready_s
    ready_s=$(since "$t0")
    until [ "$(metric "$addr" leasehold_locks)" = "$((leases * locks))" ]; do sleep 0.02; done
    echo "restarted: ready in $ready_s s, every lock back in $(since "$t0") s, RSS $(rss_of "$served")"
    sleep "${SETTLE:-15}"
    echo "settled: RSS $(rss_of "$served") after ${SETTLE:-15} s"
}

catchup() {
    local addrs=() peers="" n
    for n in 1 2 3; do
        addrs[n]="127.0.0.1:$(free_port)"
        peers+="${peers:+,}$n=${addrs[n]}"
    done
    local node_pids=()
    for n in 1 2 3; do
        serve "$bin" "${addrs[n]}" "$work/n$n" --node-id "$n" --peers "$peers"
        node_pids[n]=$served
    done
    for n in 1 2 3; do
        until [ "$(metric "${addrs[n]}" leasehold_raft_leader_known)" = 1 ]; do sleep 0.2; done
    done
    kill "${node_pids[3]}"
    wait "${node_pids[3]}" 2>/dev/null || true
    local leader=1
    [ "$(metric "${addrs[2]}" leasehold_raft_is_leader)" = 1 ] && leader=2
    hold "${addrs[leader]}" "${node_pids[leader]}"
    sleep "${SETTLE:-20}"
    echo "== $((leases * locks)) locks held on node $leader; node 3 missed them all"
    local t0
    t0=$(date +%s.%N)
    serve "$bin" "${addrs[3]}" "$work/n3" --node-id 3 --peers "$peers"
    # Its port may have been handed out meanwhile as another socket's
    # ephemeral port: say so rather than wait for ever.
    until [ "$(metric "${addrs[3]}" leasehold_locks)" = "$((leases * locks))" ]; do
        kill -0 "$served" 2>/dev/null || { echo "node 3 exited: $(tail -1 "$work/n3.log")" >&2; return 1; }
        sleep 0.05
    done
    echo "node 3 caught up: every lock in $(since "$t0") s; RSS $(rss_of "$served"), leader's $(rss_of "${node_pids[leader]}")"
    grep -a "snapshot installed" "$work/n3.log" | sed 's/\x1b\[[0-9;]*m//g' | cut -c1-200 || echo "(no snapshot installed: it caught up from the log)"
}

waiters() {
    for b in "$@"; do
        local addr="127.0.0.1:$(free_port)" dir="$work/w-$RANDOM"
        serve "$b" "$addr" "$dir"
        ready "$addr"
        echo "== $b"
        "$b" --endpoints "http://$addr" bench --workload waiters --leases "${WAITING:-100}" \
            --locks "${WAITED:-1000}" --wait "${WAIT:-30}" --clients 98 --connections 98 --server-pid "$served"
        kill "$served"
        wait "$served" 2>/dev/null || true
    done
}

storm() {
    for variant in "$@"; do
        local addr="127.0.0.1:$(free_port)" dir="$work/s-$RANDOM" b args
        read -r b args <<<"$variant"
        # shellcheck disable=SC2086 # the serve flags split into words
        serve "$b" "$addr" "$dir" $args
        ready "$addr"
        echo "== $variant"
        "$bin" --endpoints "http://$addr" bench --workload storm --leases "$leases" --locks "$locks" \
            --ttl "${TTL:-10}" --clients 64 --server-pid "$served" | tee "$work/storm.out"
        grep -a "snapshot built" "$dir.log" | sed 's/\x1b\[[0-9;]*m//g' | cut -c1-200 || true
        # The server's own pace, whatever the renewals' phase: first to last
        # lease end, and the last one's apply after the renewers stopped
        # (both clocks UTC; the log's time of day against the stop's).
        local stopped
        stopped=$(grep -o 'stopped at Unix ms [0-9]*' "$work/storm.out" | awk '{print $NF}')
        sed 's/\x1b\[[0-9;]*m//g' "$dir.log" | grep -a "lease expired" | awk -v stop="${stopped:-0}" '
            { split(substr($1, 12, 15), t, ":"); s = t[1] * 3600 + t[2] * 60 + t[3]; if (!n++) first = s; last = s }
            END { if (n) printf "server: %d leases expired in %.2f s, first to last; the last %.2f s after the renewers stopped\n",
                  n, last - first, last - (stop / 1000) % 86400 }'
        kill "$served"
        wait "$served" 2>/dev/null || true
    done
}

# snapshot: a node that snapshots every SNAP_EVERY (5000) log entries holds
# the state; then PROBES (4) clients cycle acquire + release for PROBE_S
# (30) s, so snapshots of the whole state are built while they run. Their
# latency is what a snapshot's build costs everyone else (issue 17: no
# client stalled more than 100 ms); the snapshots built meanwhile are
# listed with their copy and total times.
snapshot() {
    local addr="127.0.0.1:$(free_port)" dir="$work/snap"
    serve "$bin" "$addr" "$dir" --snapshot-every "${SNAP_EVERY:-5000}"
    ready "$addr"
    hold "$addr" "$served"
    sleep "${SETTLE:-10}"
    local before
    before=$(grep -ac "snapshot built" "$dir.log" || true)
    echo "== $((leases * locks)) locks held; $before snapshots built so far; probing for ${PROBE_S:-30} s"
    "$bin" --endpoints "http://$addr" bench --workload uncontended --clients "${PROBES:-4}" \
        --seconds "${PROBE_S:-30}" | grep -E "cycles|latency"
    grep -a "snapshot built" "$dir.log" | tail -n "+$((before + 1))" | sed 's/\x1b\[[0-9;]*m//g' | cut -c1-200
}

# allocator 'ENV...'...: for each set of environment assignments (e.g.
# 'MALLOC_ARENA_MAX=1', 'LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2',
# or '' for none), a fresh server under it holds the state; then its RSS,
# glibc's malloc_stats (what is in use against what it took from the system)
# and the RSS after malloc_trim(0), both called in the process by gdb
# (glibc's counters read 0 for a build that links mimalloc, as this
# project's does since docs/DESIGN.md §6d's seventh pass).
allocator() {
    for envs in "$@"; do
        local addr="127.0.0.1:$(free_port)" dir="$work/a-$RANDOM"
        # shellcheck disable=SC2086 # the assignments split on purpose
        env $envs "$bin" serve --listen "$addr" --data-dir "$dir" >>"$dir.log" 2>&1 &
        served=$!
        pids+=("$served")
        ready "$addr"
        hold "$addr" "$served"
        sleep "${SETTLE:-15}"
        echo "== ${envs:-(defaults)} ($leases x $locks): RSS $(rss_of "$served")"
        gdb -p "$served" -batch -ex 'call (void)malloc_stats()' -ex 'call (int)malloc_trim(0)' >/dev/null 2>&1 || true
        echo "after malloc_trim(0): RSS $(rss_of "$served")"
        grep -aA2 "^Total (incl. mmap)" "$dir.log" | tail -2 || true
        kill -9 "$holding" "$served" 2>/dev/null || true
        wait "$holding" "$served" 2>/dev/null || true
    done
}

# throughput '[ENV...] BIN'...: for each variant in turn, ROUNDS (2) times,
# a fresh node of BIN (under the environment assignments before it, e.g.
# 'LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2 ./leasehold') is
# loaded by BIN's own bench: uncontended, contended (16 keys) and
# keep-alive, 64 clients, SECONDS_PER_RUN (10) each. Side by side, so a
# noisy hour weighs on every variant alike.
throughput() {
    local round variant words b addr dir
    for round in $(seq 1 "${ROUNDS:-2}"); do
        for variant in "$@"; do
            read -r -a words <<<"$variant"
            b=${words[-1]}
            addr="127.0.0.1:$(free_port)" dir="$work/t-$RANDOM"
            env "${words[@]:0:${#words[@]}-1}" "$b" serve --listen "$addr" --data-dir "$dir" >>"$dir.log" 2>&1 &
            served=$!
            pids+=("$served")
            ready "$addr"
            echo "== round $round: $variant"
            local seconds=${SECONDS_PER_RUN:-10} ep="http://$addr"
            "$b" --endpoints "$ep" bench --workload uncontended --clients 64 --seconds "$seconds" | grep -E "cycles|latency"
            "$b" --endpoints "$ep" bench --workload contended --clients 64 --keys 16 --seconds "$seconds" | grep -E "cycles|handoff"
            "$b" --endpoints "$ep" bench --workload keepalive --clients 64 --seconds "$seconds" | grep -E "cycles|latency"
            kill "$served"
            wait "$served" 2>/dev/null || true
        done
    done
}

three_nodes() {
    local addrs=() peers="" eps="" n
    for n in 1 2 3; do
        addrs[n]="127.0.0.1:$(free_port)"
        peers+="${peers:+,}$n=${addrs[n]}"
        eps+="${eps:+,}http://${addrs[n]}"
    done
    for n in 1 2 3; do serve "$bin" "${addrs[n]}" "$work/n$n" --node-id "$n" --peers "$peers"; done
    for n in 1 2 3; do
        until [ "$(metric "${addrs[n]}" leasehold_raft_leader_known)" = 1 ]; do sleep 0.2; done
    done
    local etcd
    etcd=$("$here/etcd-cluster.sh" start 24790 | tail -1)
    trap '"$here/etcd-cluster.sh" stop 24790 >/dev/null 2>&1 || true; cleanup' EXIT
    for round in $(seq 1 "${ROUNDS:-2}"); do
        echo "=== round $round"
        "$bin" --endpoints "$eps" bench --workload uncontended --clients 64 --seconds "${SECONDS_PER_RUN:-10}"
        "$bin" --endpoints "$etcd" bench --target etcd --workload uncontended --clients 64 --seconds "${SECONDS_PER_RUN:-10}"
    done
}

cmd=${1:-}
shift || true
case $cmd in
rss) rss "${@:-$bin}" ;;
heap) heap ;;
restart) restart ;;
catchup) catchup ;;
waiters) waiters "${@:-$bin}" ;;
three-nodes) three_nodes ;;
storm) storm "${@:-$bin}" ;;
snapshot) snapshot ;;
allocator) allocator "${@:-}" ;;
throughput) throughput "$@" ;;
*)
    echo "usage: $0 rss|heap|restart|catchup|waiters|three-nodes|storm|allocator|throughput [BIN...|ENV...]" >&2
    exit 2
    ;;
esac
