//! One cluster, one identity (issue 11, item 7), with real processes.
//!
//! - A follower that lost its data dir and is started again with the same
//!   `--peers` must not form the cluster again (it forgot its votes): it
//!   exits 2 saying what happened and how to rejoin, and rejoining that way
//!   (`member remove`, `--join` on the empty dir, `member add`) works.
//! - A node of another cluster started at a member's id and address is
//!   refused by the cluster's leader (both logs name both cluster ids) and
//!   never receives the cluster's state, while the cluster serves on.
//! - Members started one after another on empty data dirs (two first, the
//!   third once they lead and committed a grant) still form one cluster: a
//!   member that never ran is not mistaken for one that lost its data.

mod common;

use common::cluster::{one_at_a_time, Cluster, Formation};
use common::{phase, u64_of, wait_for};
use serde_json::Value;
use std::time::{Duration, Instant};

/// Far longer than the test: no lease may expire during it.
const LONG_TTL: &str = "600s";
/// Bound on a refused start exiting: it asks its peers (1 s each, in
/// parallel) after opening storage; generous for a loaded machine.
const REFUSAL_MAX: Duration = Duration::from_secs(20);
/// Bound on a re-added member catching up.
const CATCH_UP_MAX: Duration = Duration::from_secs(30);
/// Bound on the leader's first refused heartbeat being logged on both sides.
const REFUSAL_LOGGED_MAX: Duration = Duration::from_secs(15);

/// Node `id`'s cluster id as its own `status --json` reports it ("" if it
/// reports none).
fn cluster_id_of(cluster: &Cluster, id: u64) -> String {
    let status = cluster
        .status(id)
        .unwrap_or_else(|| panic!("node {id} answers status"));
    status.json["cluster_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The names of the locks under `prefix` that node `id` has applied.
fn stale_names(cluster: &Cluster, id: u64, prefix: &str) -> Vec<(String, u64)> {
    let listed = cluster
        .cli_on(id, &["ls", prefix, "--stale", "--json"])
        .expect_code(0)
        .json();
    listed
        .as_array()
        .unwrap_or_else(|| panic!("ls --json is an array: {listed}"))
        .iter()
        .map(|lock: &Value| {
            let name = lock["lock"].as_str().unwrap_or_default().to_owned();
            (name, lock["token"].as_u64().unwrap_or(0))
        })
        .collect()
}

/// Waits until node `id` has applied the grant of `name` with `token`.
fn await_grant(cluster: &Cluster, id: u64, name: &str, token: u64) {
    let prefix = name.split_once('/').map_or("", |(p, _)| p);
    let what = format!("node {id} to hold {name} with token {token}");
    wait_for(&what, CATCH_UP_MAX, || {
        let names = stale_names(cluster, id, &format!("{prefix}/"));
        names.contains(&(name.to_owned(), token)).then_some(())
    });
}

/// A line of `log` about a refused Raft message that names both ids.
fn refusal_line(log: &str, a: &str, b: &str) -> Option<String> {
    log.lines()
        .find(|line| line.contains("refused") && line.contains(a) && line.contains(b))
        .map(str::to_owned)
}

#[test]
fn t96_a_member_that_lost_its_data_must_rejoin_with_join() {
    let _serial = one_at_a_time();
    let mut cluster = Cluster::start(3);
    let (leader, _) = cluster.leader();
    let ours = cluster_id_of(&cluster, leader);

    phase("acquire a lock; a follower applies it");
    let got = cluster.ok_json(&["acquire", "ident/held", "--ttl", LONG_TTL, "--json"]);
    let token = u64_of(&got, "token");
    let follower = cluster.ids().into_iter().find(|id| *id != leader).unwrap();
    await_grant(&cluster, follower, "ident/held", token);

    phase(&format!(
        "kill -9 node {follower}, wipe its data dir, start it again with the same --peers"
    ));
    cluster.kill9(follower);
    cluster.wipe(follower);
    let (exit, took, log) = cluster.start_refused(follower, REFUSAL_MAX);
    eprintln!(
        "measured: the wiped node exited ({exit}) {} ms after it started",
        took.as_millis()
    );
    assert_eq!(exit.code(), Some(2), "exit code 2 (usage); log:\n{log}");
    for part in [
        "empty data dir",
        ours.as_str(),
        "member remove",
        "--join",
        "member add",
    ] {
        assert!(log.contains(part), "{part:?} missing from:\n{log}");
    }
    assert_eq!(ours.len(), 32, "a cluster id is 32 hex digits: {ours:?}");

    phase("follow the advice: member remove, --join on the empty data dir, member add");
    cluster.ok_json(&["member", "remove", &follower.to_string(), "--json"]);
    cluster.set_formation(follower, Formation::Join);
    cluster.restart(follower);
    assert_eq!(
        cluster_id_of(&cluster, follower),
        "",
        "a joining node has no cluster id until it is added"
    );
    let addr = cluster.advertised(follower);
    let started = Instant::now();
    // Through the live members, leader first: a client's first try at the
    // joining node (no leader known) would leave it one hop short.
    let members: Vec<u64> = std::iter::once(leader)
        .chain(
            cluster
                .ids()
                .into_iter()
                .filter(|id| *id != leader && *id != follower),
        )
        .collect();
    let add = ["member", "add", &follower.to_string(), &addr, "--json"];
    cluster.cli_via(&members, &add).expect_code(0);
    await_grant(&cluster, follower, "ident/held", token);
    eprintln!(
        "measured: re-added node {follower} showed the lock {} ms after member add began",
        started.elapsed().as_millis()
    );

    phase("all three report the same cluster id");
    for id in cluster.ids() {
        assert_eq!(cluster_id_of(&cluster, id), ours, "node {id}");
    }
    let joined = format!("joined cluster {ours}");
    assert!(
        cluster.log_text(follower).contains(&joined),
        "node {follower} logs {joined:?}"
    );
}

#[test]
fn t96_a_node_of_another_cluster_is_refused() {
    let _serial = one_at_a_time();
    let mut cluster = Cluster::start(3);
    let (leader, _) = cluster.leader();
    let ours = cluster_id_of(&cluster, leader);
    cluster.ok_json(&["acquire", "ident/a-only", "--ttl", LONG_TTL, "--json"]);
    let victim = cluster.ids().into_iter().find(|id| *id != leader).unwrap();
    let other = cluster
        .ids()
        .into_iter()
        .find(|id| *id != leader && *id != victim)
        .unwrap();

    phase(&format!(
        "replace node {victim} by a one-member cluster of its own, same id and address"
    ));
    cluster.kill9(victim);
    cluster.wipe(victim);
    cluster.set_formation(victim, Formation::Alone);
    let started = Instant::now();
    cluster.restart(victim);
    let theirs = cluster_id_of(&cluster, victim);

    phase("A's leader is refused, and both logs name both cluster ids");
    let (sent, received) = wait_for("both sides to log the refusal", REFUSAL_LOGGED_MAX, || {
        let fed = stale_names(&cluster, victim, "ident/");
        assert_eq!(fed, [], "node {victim} received cluster A's state");
        if ours.is_empty() || theirs.is_empty() {
            return None;
        }
        let sent = refusal_line(&cluster.log_text(leader), &ours, &theirs)?;
        let received = refusal_line(&cluster.log_text(victim), &ours, &theirs)?;
        Some((sent, received))
    });
    eprintln!(
        "measured: refusal logged on both sides {} ms after node {victim} restarted\n  \
         leader: {sent}\n  node {victim}: {received}",
        started.elapsed().as_millis()
    );
    assert!(
        theirs.len() == 32 && theirs != ours,
        "node {victim} formed another cluster: {theirs:?} (cluster A is {ours:?})"
    );

    phase("A keeps serving with its two remaining members");
    let via = [leader, other];
    let run = cluster.cli_via(
        &via,
        &["acquire", "ident/after", "--ttl", LONG_TTL, "--json"],
    );
    run.expect_code(0);
    let status = cluster.status(leader).expect("A's leader answers");
    assert_eq!(status.state, "Leader", "{:?}", status.json);

    phase(&format!("node {victim} never received A's state"));
    assert_eq!(
        stale_names(&cluster, victim, "ident/"),
        [],
        "A's locks on node {victim}"
    );
    let own = cluster.status(victim).expect("node answers");
    assert_eq!(
        own.members.keys().copied().collect::<Vec<_>>(),
        [victim],
        "node {victim} knows only its own cluster: {:?}",
        own.json
    );
    assert_eq!(
        cluster_id_of(&cluster, victim),
        theirs,
        "its id never changed"
    );
}

#[test]
fn t96_members_started_one_after_another_form_one_cluster() {
    let _serial = one_at_a_time();
    let mut cluster = Cluster::start_first(3, 2);
    let (leader, _) = cluster.leader();
    let ours = cluster_id_of(&cluster, leader);
    let got = cluster.ok_json(&["acquire", "ident/early", "--ttl", LONG_TTL, "--json"]);
    let token = u64_of(&got, "token");

    phase("node 3 starts on its empty data dir after the others formed the cluster");
    let started = Instant::now();
    cluster.restart(3);
    await_grant(&cluster, 3, "ident/early", token);
    eprintln!(
        "measured: the late member applied the grant {} ms after it started",
        started.elapsed().as_millis()
    );
    for id in cluster.ids() {
        assert_eq!(cluster_id_of(&cluster, id), ours, "node {id}");
    }
    let status = cluster.status(3).expect("node 3 answers");
    assert_eq!(status.voters(), 3, "{:?}", status.json);
}
