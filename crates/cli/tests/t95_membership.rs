//! Membership changes on a live cluster (docs/DESIGN.md §6), with real processes:
//! three nodes hold locks and take load until their logs are purged behind
//! a snapshot; a fourth node started with `--join` is added with `member
//! add` and must catch up (by snapshot: the start of the log is gone) and
//! vote; then the leader removes itself with `member remove`. A new leader
//! must be elected among the rest, and every acknowledged grant must still
//! be held with its token (released ones stay released), new grants above
//! every earlier token. Along the way: `--stale` reads answer on any node,
//! plain reads on a follower reach the leader, and bad membership requests
//! are refused with a message that names the cause.

mod common;

use common::cluster::{one_at_a_time, Cluster, NodeStatus};
use common::{finish, free_port, phase, u64_of, wait_for, Server, BIN};
use serde_json::Value;
use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Log entries between snapshots on every node of the test: low, so that
/// the load below makes the nodes snapshot and purge their logs.
const SNAPSHOT_EVERY: &str = "64";
/// Locks acquired before the changes; the first `RELEASED` are released.
const LOCKS: usize = 6;
const RELEASED: usize = 2;
/// Far longer than the test: no lease may expire during it.
const LONG_TTL: &str = "600s";
/// Bound on a new member catching up after `member add` answered.
const CATCH_UP_MAX: Duration = Duration::from_secs(30);
/// Bound on the load making the leader purge its log.
const PURGE_MAX: Duration = Duration::from_secs(30);
/// Bound on electing a new leader after the leader removed itself.
const ELECTION_MAX: Duration = Duration::from_secs(20);

/// One acknowledged grant.
#[derive(Debug)]
struct Grant {
    name: String,
    lease: u64,
    token: u64,
    /// Released (and acknowledged) by the test.
    released: bool,
}

/// `(id, voter, role)` of every member in a `status` or `member` document.
fn members(doc: &Value) -> Vec<(u64, bool, String)> {
    doc["members"]
        .as_array()
        .unwrap_or_else(|| panic!("no members in {doc}"))
        .iter()
        .map(|m| {
            (
                u64_of(m, "id"),
                m["voter"].as_bool().unwrap_or(false),
                m["role"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn number(status: &NodeStatus, key: &str) -> u64 {
    u64_of(&status.json, key)
}

/// Starts `leasehold bench` (uncontended, a few clients) against node
/// `id`: hundreds of log entries in a couple of seconds.
fn load(cluster: &Cluster, id: u64, seconds: u64) -> std::process::Child {
    let endpoint = cluster.endpoint(id);
    let seconds = seconds.to_string();
    Command::new(BIN)
        .args([
            "bench",
            "--endpoints",
            &endpoint,
            "--workload",
            "uncontended",
        ])
        .args(["--clients", "4", "--seconds", &seconds, "--json"])
        .env_remove("LEASEHOLD_ENDPOINTS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn leasehold bench")
}

/// Asserts every grant as read from node `id` (leader reads): held ones by
/// the same lease and token, released ones not held.
fn assert_grants(cluster: &Cluster, id: u64, grants: &[Grant]) {
    for grant in grants {
        let run = cluster.cli_on(id, &["get", &grant.name, "--json"]);
        if grant.released {
            let free = run.code == 4 || (run.code == 0 && run.json()["held"] == false);
            assert!(free, "released lock {} is held again: {run:?}", grant.name);
            continue;
        }
        let got = run.expect_code(0).json();
        assert_eq!(got["held"], true, "{} lost its holder: {got}", grant.name);
        assert_eq!(u64_of(&got, "token"), grant.token, "{}: {got}", grant.name);
        assert_eq!(u64_of(&got, "lease"), grant.lease, "{}: {got}", grant.name);
    }
}

#[test]
fn t95_add_by_snapshot_then_remove_the_leader() {
    let _serial = one_at_a_time();
    // Every node this test starts inherits it (`serve --snapshot-every`).
    std::env::set_var("LEASEHOLD_SNAPSHOT_EVERY", SNAPSHOT_EVERY);
    let mut cluster = Cluster::start(3);
    let (leader, _) = cluster.leader();

    phase("acquire locks with long leases; release some of them");
    let mut grants = Vec::new();
    for i in 0..LOCKS {
        let name = format!("member/held-{i}");
        let got = cluster.ok_json(&["acquire", &name, "--ttl", LONG_TTL, "--json"]);
        grants.push(Grant {
            name,
            lease: u64_of(&got, "lease"),
            token: u64_of(&got, "token"),
            released: false,
        });
    }
    for grant in grants.iter_mut().take(RELEASED) {
        let (lease, token) = (grant.lease.to_string(), grant.token.to_string());
        let args = ["release", &grant.name, "--lease", &lease, "--token", &token];
        cluster.cli(&args).expect_code(0);
        grant.released = true;
    }

    phase("load until the leader snapshotted and purged the start of its log");
    let started = Instant::now();
    let purged = wait_for("the leader to purge its log", PURGE_MAX, || {
        let bench = finish(load(&cluster, leader, 1), "bench", Duration::from_secs(60));
        bench.expect_code(0);
        let status = cluster.status(leader)?;
        let purged = number(&status, "purged_index");
        (purged > 0).then_some(purged)
    });
    eprintln!(
        "measured: leader {leader} purged up to index {purged} after {} ms of load",
        started.elapsed().as_millis()
    );

    phase("bad membership requests are refused with the cause");
    let run = cluster.cli(&["member", "add", "0", "127.0.0.1:1"]);
    run.expect_code(2);
    assert!(run.stderr.contains("id"), "{run:?}");
    let run = cluster.cli(&["member", "add", "7", "no-port"]);
    run.expect_code(2);
    assert!(run.stderr.contains("HOST:PORT"), "{run:?}");
    let run = cluster.cli(&["member", "remove", "9"]);
    run.expect_code(2);
    assert!(run.stderr.contains("not a member"), "{run:?}");
    let run = cluster.cli(&["member", "add", "2", "127.0.0.1:1"]);
    run.expect_code(2);
    assert!(run.stderr.contains("already a member"), "{run:?}");
    let same = cluster.advertised(2);
    let again = cluster.ok_json(&["member", "add", "2", &same, "--json"]);
    assert_eq!(
        members(&again).len(),
        3,
        "adding a voter again changed nothing: {again}"
    );

    phase("start node 4 with --join and add it under load");
    let joining = cluster.add_joining_node();
    let before = cluster.status(joining).expect("the joining node answers");
    assert!(
        before.members.is_empty(),
        "a joining node knows no cluster: {:?}",
        before.json
    );
    let addr = cluster.advertised(joining);
    let run = cluster.cli(&["member", "add", "5", &addr]);
    run.expect_code(2);
    assert!(run.stderr.contains("is node 4, not node 5"), "{run:?}");
    let nobody = format!("127.0.0.1:{}", free_port());
    let run = cluster.cli(&["member", "add", "5", &nobody]);
    run.expect_code(2);
    assert!(run.stderr.contains("no leasehold node answers"), "{run:?}");
    let background = load(&cluster, leader, 3);
    let started = Instant::now();
    let added = cluster.ok_json(&["member", "add", &joining.to_string(), &addr, "--json"]);
    let add_took = started.elapsed();
    let in_reply = members(&added);
    assert!(
        in_reply
            .iter()
            .any(|(id, voter, _)| *id == joining && *voter),
        "member add answered before node {joining} votes: {added}"
    );
    let caught_up = wait_for(
        "node 4 to apply what the leader committed",
        CATCH_UP_MAX,
        || {
            let target = number(&cluster.status(leader)?, "commit_index");
            let status = cluster.status(joining)?;
            let voter = status.members.get(&joining) == Some(&true);
            (voter && status.applied_index >= target).then_some(status)
        },
    );
    let catch_up_took = started.elapsed();
    eprintln!(
        "measured: member add answered after {} ms; node {joining} applied index {} \
         (snapshot index {}) {} ms after the add began",
        add_took.as_millis(),
        caught_up.applied_index,
        number(&caught_up, "snapshot_index"),
        catch_up_took.as_millis()
    );
    // Entries up to `purged` exist on no node's log: the new node can only
    // hold them through a snapshot.
    assert!(
        number(&caught_up, "snapshot_index") >= purged,
        "node {joining} did not catch up by snapshot: {:?}",
        caught_up.json
    );
    finish(background, "background bench", Duration::from_secs(60)).expect_code(0);
    let listed = cluster.ok_json(&["member", "ls", "--json"]);
    let roles: Vec<_> = members(&listed)
        .into_iter()
        .map(|(id, _, role)| (id, role))
        .collect();
    assert!(
        roles.contains(&(joining, "Follower".to_owned()))
            && roles.contains(&(leader, "Leader".to_owned())),
        "member ls: {listed}"
    );
    for member in listed["members"].as_array().expect("members") {
        assert!(
            member["matched_index"].as_u64().is_some(),
            "ls asks the leader: {listed}"
        );
    }

    phase("stale reads answer on a follower; plain reads there reach the leader");
    let held = &grants[RELEASED];
    let stale = cluster
        .cli_on(joining, &["ls", "member/", "--stale", "--json"])
        .expect_code(0)
        .json();
    let names: BTreeSet<&str> = stale
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|lock| lock["lock"].as_str())
        .collect();
    let expected: BTreeSet<&str> = grants
        .iter()
        .filter(|g| !g.released)
        .map(|g| g.name.as_str())
        .collect();
    assert_eq!(names, expected, "stale ls on node {joining}: {stale}");
    let got = cluster
        .cli_on(joining, &["get", &held.name, "--stale", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(u64_of(&got, "token"), held.token, "{got}");
    let run = cluster.cli_on(joining, &["get", &held.name, "--json"]);
    match run.code {
        0 => assert_eq!(u64_of(&run.json(), "token"), held.token, "{run:?}"),
        5 => assert!(run.stderr.contains("not the leader"), "{run:?}"),
        _ => panic!("plain get on a follower: {run:?}"),
    }

    phase(&format!("the leader (node {leader}) removes itself"));
    let revision_before = number(&cluster.status(leader).expect("leader status"), "revision");
    let started = Instant::now();
    let removed = cluster.ok_json(&["member", "remove", &leader.to_string(), "--json"]);
    let remove_took = started.elapsed();
    assert!(
        members(&removed).iter().all(|(id, _, _)| *id != leader),
        "node {leader} is still a member: {removed}"
    );
    let rest: Vec<u64> = cluster
        .ids()
        .into_iter()
        .filter(|id| *id != leader)
        .collect();
    let new_leader = wait_for("a new leader among the rest", ELECTION_MAX, || {
        let statuses: Vec<NodeStatus> = rest
            .iter()
            .map(|id| cluster.status(*id))
            .collect::<Option<_>>()?;
        let named = statuses[0].leader;
        let agreed = statuses.iter().all(|s| s.leader == named) && rest.contains(&named);
        let leads = statuses
            .iter()
            .any(|s| s.node_id == named && s.state == "Leader");
        (agreed && leads).then_some(named)
    });
    let elected_after = started.elapsed();
    eprintln!(
        "measured: member remove {leader} answered after {} ms; node {new_leader} leads \
         {} ms after the removal began",
        remove_took.as_millis(),
        elected_after.as_millis()
    );
    let status = cluster.status(new_leader).expect("new leader status");
    let ids: Vec<u64> = status.members.keys().copied().collect();
    assert_eq!(
        ids, rest,
        "members after removing node {leader}: {:?}",
        status.json
    );
    assert_eq!(status.voters(), rest.len(), "{:?}", status.json);

    phase("the removed node still answers stale reads; then it is stopped");
    let status = cluster.status(leader).expect("the removed node answers");
    assert!(
        status.state != "Leader" && status.leader != leader,
        "the removed node still claims to lead: {:?}",
        status.json
    );
    let run = cluster.cli_on(leader, &["get", &held.name, "--json"]);
    run.expect_code(5);
    let run = cluster.cli_on(leader, &["get", &held.name, "--stale", "--json"]);
    assert_eq!(
        u64_of(&run.expect_code(0).json(), "token"),
        held.token,
        "{run:?}"
    );

    phase("the removed node knows it: status, stale reads and writes say so");
    wait_for(
        "the removed node to know it",
        Duration::from_secs(10),
        || {
            let status = cluster.status(leader)?;
            (status.json["removed"] == true).then_some(())
        },
    );
    let stale = cluster.cli_on(leader, &["get", &held.name, "--stale", "--json"]);
    assert!(
        stale
            .expect_code(0)
            .stderr
            .contains("removed from the cluster"),
        "a stale read from the removed node did not say so: {stale:?}"
    );
    let write = cluster.cli_on(leader, &["acquire", "member/on-removed", "--ttl", "10s"]);
    write.expect_code(5);
    assert!(
        write
            .stderr
            .contains(&format!("node {leader} was removed from the cluster")),
        "{write:?}"
    );
    cluster.kill9(leader);

    phase("every acknowledged grant survived with its token, read from the new leader");
    assert_grants(&cluster, new_leader, &grants);
    let highest = grants
        .iter()
        .map(|g| g.token)
        .max()
        .unwrap_or(0)
        .max(revision_before);
    let fresh = cluster.ok_json(&["acquire", "member/after", "--ttl", LONG_TTL, "--json"]);
    assert!(
        u64_of(&fresh, "token") > highest,
        "new grant {fresh} not above {highest}"
    );
    let again = cluster.ok_json(&["acquire", &grants[0].name, "--ttl", LONG_TTL, "--json"]);
    assert!(
        u64_of(&again, "token") > u64_of(&fresh, "token"),
        "re-grant of a released lock: {again}"
    );
}

#[test]
fn t95_the_last_voter_cannot_be_removed() {
    let server = Server::start();
    let run = server.cli(&["member", "remove", "1"]);
    run.expect_code(2);
    assert!(run.stderr.contains("last voter"), "{run:?}");
    let listed = server.ok_json(&["member", "ls", "--json"]);
    assert_eq!(
        members(&listed),
        [(1, true, "Leader".to_owned())],
        "{listed}"
    );
    let status = server.ok_json(&["status", "--json"]);
    assert!(
        u64_of(&status, "commit_index") >= u64_of(&status, "applied_index"),
        "{status}"
    );
    assert_eq!(status["members"][0]["lag"], 0, "{status}");
}
