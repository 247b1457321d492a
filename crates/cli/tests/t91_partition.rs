//! A minority partition (docs/DESIGN.md §2.3, §2.4): the leader of a
//! three-node cluster is cut off from the other two. The isolated old
//! leader must not grant (an acquire sent to it alone fails), must not
//! renew (a keep-alive sent to it alone fails), and must expire nothing (a
//! lease renewed through the majority keeps its lock, in the majority's
//! state, long past the moment the isolated node's own timers consider it
//! due). The majority elects a leader and serves acquires. After healing,
//! the old leader steps down (Follower at the new term), catches up (its
//! applied index reaches the leader's), and nothing it was asked while
//! isolated took effect.
//!
//! # How the partition is made
//!
//! With fault-injecting TCP proxies (`common/cluster/partition.rs`), no
//! root needed: each node is known to the others (in `--peers`) by a proxy
//! on `127.0.0.(20+i)` that forwards to its real address `127.0.0.(10+i)`,
//! and each node's outgoing Raft connections come from its own IP. To
//! isolate node k, k's proxy refuses every connection and the others refuse
//! connections from k's IP; matching connections already open are cut.
//! Raft replies travel on the caller's connection, so cutting connections
//! (rather than dropping packets) separates k from the majority in both
//! directions. The test reaches k directly at its listen address, so it
//! can still send k requests; its other clients talk to the majority.

mod common;

use common::cluster::workload::{hold_kept, watch, Watch};
use common::cluster::{one_at_a_time, Cluster};
use common::{finish, phase, u64_of, wait_for};
use leasehold_client::CancellationToken;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The kept lease, renewed by the library through the majority. Its
/// keep-alive stream breaks at the isolation and must reconnect within the
/// lease's local validity (last acknowledged send + ttl − ttl/10): the
/// election (≈ 2 s) plus the client's retry delays, which keep growing (to
/// 2 s) while the followers still name the isolated leader. Renewed every
/// second, a 10 s lease has ≥ 8 s for it (a 6 s lease renewed every 500 ms
/// was lost in 2 runs of 4).
const KEPT_TTL: Duration = Duration::from_secs(10);
const KEPT_INTERVAL: Duration = Duration::from_secs(1);
const KEPT_LOCK: &str = "partition/kept";
/// The extra time a new leader gives inherited deadlines (ServeConfig).
const FAILOVER_MARGIN: Duration = Duration::from_millis(500);
/// Scheduling slack on a loaded two-core machine.
const SLACK: Duration = Duration::from_secs(1);
/// Bound on each request sent to the isolated node (`--timeout`), and on
/// the CLI process that sends it.
const ISOLATED_TIMEOUT: &str = "2s";
const ISOLATED_LIMIT: Duration = Duration::from_secs(10);
/// Bound on the old leader stepping down and catching up after healing.
const HEAL_LIMIT: Duration = Duration::from_secs(15);

/// Whether `name` has no holder: `get` says so, or the lock does not exist
/// (a free lock without waiters is deleted: NoSuchLock, exit 4).
fn is_free(cluster: &Cluster, via: &[u64], name: &str) -> bool {
    let run = cluster.cli_via(via, &["get", name, "--json"]);
    match run.code {
        0 => run.json()["held"] == false,
        4 if run.stderr.contains("no lock named") => true,
        _ => panic!("get {name} failed: {run:?}"),
    }
}

#[test]
fn t91_isolated_leader_neither_grants_nor_renews_nor_expires() {
    let _serial = one_at_a_time();
    let cluster = Cluster::start_partitionable(3);
    let (old, old_term) = cluster.leader();
    let majority: Vec<u64> = cluster.ids().into_iter().filter(|&id| id != old).collect();
    let majority_urls: Vec<String> = majority.iter().map(|&id| cluster.endpoint(id)).collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let stop = CancellationToken::new();

    phase("a library client, talking to the majority's nodes, holds a lock");
    let (kept_lease, kept) = rt.block_on(hold_kept(
        &majority_urls,
        KEPT_TTL,
        KEPT_INTERVAL,
        KEPT_LOCK,
    ));
    let kept_token = kept.token().0;
    let watched = Arc::new(Mutex::new(Watch::default()));
    let watcher = rt.spawn(watch(kept.handle(), watched.clone(), stop.clone()));
    // An idle lease every node knows, for requests sent to the isolated node.
    let idle = cluster.ok_json(&["lease", "grant", "--ttl", "60s", "--json"]);
    let idle_id = u64_of(&idle, "lease").to_string();
    let idle_before = cluster.ok_json(&["lease", "get", &idle_id, "--json"]);

    phase("isolate the leader; at once send it an acquire and a keep-alive");
    let isolated_at = Instant::now();
    cluster.isolate(old);
    // Sent while it still believes it leads (the majority has not yet
    // elected anyone): the most tempting moment to answer.
    let minority = "partition/minority";
    let timeout = ["--timeout", ISOLATED_TIMEOUT];
    let to_isolated = [
        (
            "acquire under a known lease",
            [&timeout[..], &["acquire", minority, "--lease", &idle_id]].concat(),
        ),
        (
            "acquire under a fresh lease",
            [&timeout[..], &["acquire", minority, "--ttl", "30s"]].concat(),
        ),
        (
            "keep-alive",
            [&timeout[..], &["lease", "keepalive", &idle_id, "--once"]].concat(),
        ),
    ];
    let sent: Vec<_> = to_isolated
        .iter()
        .map(|(what, args)| {
            let child = cluster
                .command_on(old, args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn leasehold");
            (*what, child)
        })
        .collect();

    phase("the majority elects a leader and serves acquires");
    let (new, new_term) = cluster.leader_after(old_term);
    let elected_after = isolated_at.elapsed();
    assert_ne!(new, old, "the isolated node is still the majority's leader");
    assert!(new_term > old_term, "term {new_term}, was {old_term}");
    let acquire = ["acquire", "partition/majority", "--ttl", "60s", "--json"];
    let majority_grant = cluster.cli_via(&majority, &acquire).expect_code(0).json();
    let majority_token = u64_of(&majority_grant, "token");
    assert!(majority_token > kept_token);

    phase("the isolated old leader granted nothing and renewed nothing");
    for (what, child) in sent {
        let run = finish(child, what, ISOLATED_LIMIT);
        assert_ne!(run.code, 0, "the isolated node answered a {what}: {run:?}");
    }
    let seen_by_old = cluster
        .status(old)
        .expect("the isolated node answers status");
    eprintln!(
        "isolated node {old}: state {}, term {}, leader {}, applied {}",
        seen_by_old.state, seen_by_old.term, seen_by_old.leader, seen_by_old.applied_index
    );
    assert!(
        seen_by_old.term < new_term,
        "the isolated node heard of term {}",
        seen_by_old.term
    );

    phase("the isolated old leader expires nothing");
    // Its timers last saw a renewal of the kept lease before the isolation,
    // so by now + ttl + margin it considers the lease due. The lease must
    // stay held in the majority's state, renewed through the new leader.
    let due_on_old = isolated_at + KEPT_TTL + FAILOVER_MARGIN + SLACK;
    // Checked until one check begins after that moment (a linearizable
    // read through the majority's leader).
    let mut checks = 0;
    loop {
        let began = Instant::now();
        let got = cluster.cli_via(&majority, &["get", KEPT_LOCK, "--json"]);
        let got = got.expect_code(0).json();
        assert_eq!(
            u64_of(&got, "token"),
            kept_token,
            "the kept lock changed: {got}"
        );
        assert_eq!(u64_of(&got, "lease"), kept_lease.id().0, "{got}");
        let failed = watched.lock().expect("watch").failed.clone();
        assert!(failed.is_none(), "the kept lock was lost: {failed:?}");
        checks += 1;
        if began > due_on_old {
            break;
        }
    }

    phase("heal: the old leader steps down and catches up");
    cluster.heal();
    let healed_at = Instant::now();
    let (leader, term) = wait_for("the old leader to step down", HEAL_LIMIT, || {
        let leader = cluster.try_leader()?;
        let status = cluster.status(old)?;
        let following = status.state == "Follower" && status.leader == leader.0;
        (following && status.term == leader.1).then_some(leader)
    });
    let stepped_down_after = healed_at.elapsed();
    let target = cluster.status(leader).expect("leader status").applied_index;
    wait_for("the old leader to catch up", HEAL_LIMIT, || {
        let status = cluster.status(old)?;
        (status.applied_index >= target).then_some(())
    });
    let caught_up_after = healed_at.elapsed();

    phase("nothing the isolated node was asked took effect; the majority's work stands");
    assert!(is_free(&cluster, &majority, minority), "{minority} is held");
    let idle_after = cluster.ok_json(&["lease", "get", &idle_id, "--json"]);
    assert_eq!(
        idle_after["renewed_unix_ms"], idle_before["renewed_unix_ms"],
        "the keep-alive sent to the isolated node was applied: {idle_after}"
    );
    assert_eq!(idle_after["holds"], serde_json::json!([]), "{idle_after}");
    let got = cluster.ok_json(&["get", KEPT_LOCK, "--json"]);
    assert_eq!(u64_of(&got, "token"), kept_token, "{got}");
    assert_eq!(u64_of(&got, "lease"), kept_lease.id().0, "{got}");
    let got = cluster.ok_json(&["get", "partition/majority", "--json"]);
    assert_eq!(u64_of(&got, "token"), majority_token, "{got}");
    assert!(kept.fence().is_ok(), "the kept lock is lost after healing");
    stop.cancel();
    rt.block_on(watcher).expect("the watcher panicked");
    let seen = watched.lock().expect("watch");
    assert!(
        seen.failed.is_none(),
        "the kept lock was lost: {:?}",
        seen.failed
    );
    assert!(
        seen.last_ok.is_some_and(|at| at > due_on_old),
        "the kept lock was not checked past the isolated node's deadline: {seen:?}"
    );
    eprintln!(
        "measured: majority agreed on leader {new} (term {new_term}) {} ms after the \
         isolation; kept lock checked {checks} times through the majority over {} ms; \
         after healing, old leader {old} followed at term {term} after {} ms and caught up \
         to index {target} after {} ms; fence() Ok {} times, never failed",
        elected_after.as_millis(),
        (due_on_old - isolated_at).as_millis(),
        stepped_down_after.as_millis(),
        caught_up_after.as_millis(),
        seen.oks,
    );
    drop(seen);
    rt.block_on(async move {
        kept.release().await.expect("release");
        drop(kept_lease);
    });
}
