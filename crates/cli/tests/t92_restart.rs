//! Restarting a whole cluster (docs/DESIGN.md §2.2, §6): three nodes hold
//! several locks, all three are killed with SIGKILL at once and started
//! again on the same data dirs. A leader must be elected; every lock whose
//! lease still lives must be held by the same lease with the same token; a
//! new grant's token must be above every token granted before; and a lease
//! that is not renewed must still expire after the restart (the timers are
//! rebuilt from the replayed log, not lost with the processes).

mod common;

use common::cluster::{one_at_a_time, Cluster};
use common::{phase, u64_of, wait_for};
use std::time::{Duration, Instant};

/// Locks held across the restart, with leases far longer than the test.
const LOCKS: usize = 4;
const LONG_TTL: &str = "120s";
/// A lease left to expire after the restart.
const SHORT_TTL: Duration = Duration::from_secs(3);
/// Longest election timeout (crates/server/src/raft/node.rs).
const ELECTION_TIMEOUT_MAX: Duration = Duration::from_millis(1_000);
/// The extra time a new leader gives inherited deadlines (ServeConfig).
const FAILOVER_MARGIN: Duration = Duration::from_millis(500);
/// Scheduling slack on a loaded two-core machine.
const SLACK: Duration = Duration::from_secs(1);

/// Whether `name` has no holder: `get` says so, or the lock is gone (a
/// free lock without waiters is deleted: `get` answers NoSuchLock, exit 4).
fn is_free(cluster: &Cluster, name: &str) -> bool {
    let run = cluster.cli(&["get", name, "--json"]);
    match run.code {
        0 => run.json()["held"] == false,
        4 if run.stderr.contains("no lock named") => true,
        _ => panic!("get {name} failed: {run:?}"),
    }
}

#[test]
fn t92_full_restart_keeps_holders_and_tokens() {
    let _serial = one_at_a_time();
    let mut cluster = Cluster::start(3);

    phase("acquire several locks with long leases, and one with a short lease");
    let mut held = Vec::new();
    for i in 0..LOCKS {
        let name = format!("restart/held-{i}");
        let got = cluster.ok_json(&["acquire", &name, "--ttl", LONG_TTL, "--json"]);
        held.push((name, u64_of(&got, "lease"), u64_of(&got, "token")));
    }
    let short = cluster.ok_json(&[
        "acquire",
        "restart/short",
        "--ttl",
        &format!("{}ms", SHORT_TTL.as_millis()),
        "--json",
    ]);
    let short_token = u64_of(&short, "token");
    let highest = held.iter().map(|(_, _, t)| *t).max().unwrap_or(0);
    let highest = highest.max(short_token);
    let tokens: Vec<u64> = held.iter().map(|(_, _, t)| *t).collect();
    let mut sorted = tokens.clone();
    sorted.dedup();
    assert_eq!(
        sorted.len(),
        tokens.len(),
        "two grants share a token: {tokens:?}"
    );

    phase("SIGKILL every node, then start all three on the same data dirs");
    cluster.stop_all();
    assert!(cluster.live_ids().is_empty());
    let restarted_at = Instant::now();
    cluster.restart_all();
    let (leader, term) = cluster.leader();
    let elected = restarted_at.elapsed();
    eprintln!(
        "measured: leader {leader} at term {term} agreed {} ms after the restart began",
        elected.as_millis()
    );

    phase("every long-lived lock is held by the same lease with the same token");
    for (name, lease, token) in &held {
        let got = cluster.ok_json(&["get", name, "--json"]);
        assert_eq!(got["held"], true, "{name} lost its holder: {got}");
        assert_eq!(u64_of(&got, "token"), *token, "{name}: {got}");
        assert_eq!(u64_of(&got, "lease"), *lease, "{name}: {got}");
        // Held in the state, not only displayed: another lease is refused.
        cluster
            .cli(&["acquire", name, "--ttl", "5s"])
            .expect_code(3);
    }

    phase("a new grant's token is above every token granted before the restart");
    let fresh = cluster.ok_json(&["acquire", "restart/new", "--ttl", "30s", "--json"]);
    let fresh_token = u64_of(&fresh, "token");
    assert!(
        fresh_token > highest,
        "new token {fresh_token} is not above {highest}, the highest before the restart"
    );
    let freed_held = &held[0];
    cluster
        .cli(&[
            "release",
            &freed_held.0,
            "--lease",
            &freed_held.1.to_string(),
            "--token",
            &freed_held.2.to_string(),
        ])
        .expect_code(0);
    let regrant = cluster.ok_json(&["acquire", &freed_held.0, "--ttl", "30s", "--json"]);
    assert!(
        u64_of(&regrant, "token") > fresh_token,
        "re-grant of {} after release: {regrant}",
        freed_held.0
    );

    phase("the short lease, never renewed, still expires after the restart");
    // After a restart every node counts the lease's ttl from its own replay
    // of the latest renewal (before the election), and the new leader may
    // add the failover margin: the lease is gone within ttl + margin of the
    // moment a leader was agreed. On a loaded machine the processes' start
    // alone can take seconds, so the election, not the kill, is the anchor
    // (never earlier than two election timeouts after the restart began).
    let bound = elected.max(2 * ELECTION_TIMEOUT_MAX) + SHORT_TTL + FAILOVER_MARGIN + SLACK;
    let freed_after = wait_for("the short lease's lock to be freed", bound * 2, || {
        is_free(&cluster, "restart/short").then(|| restarted_at.elapsed())
    });
    eprintln!(
        "measured: short lease (ttl {} ms) freed {} ms after the restart began",
        SHORT_TTL.as_millis(),
        freed_after.as_millis()
    );
    assert!(
        freed_after <= bound,
        "freed {freed_after:?} after the restart; bound {bound:?}"
    );
    // No node can have applied the lease's grant before it restarted, and
    // each counts the ttl from its own apply: never freed sooner.
    assert!(
        freed_after >= SHORT_TTL,
        "freed {freed_after:?} after the restart, before its ttl {SHORT_TTL:?}"
    );
}
