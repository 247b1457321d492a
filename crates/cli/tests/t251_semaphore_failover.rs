//! A semaphore across a leader failover in a three-node cluster (issue 18):
//! its grants are replicated like a lock's holder, so after the leader is
//! SIGKILLed the new leader shows the same grants with the same tokens; a
//! waiter queued before the kill keeps its place and its wait (the new
//! leader re-arms pool waits), and is granted when a permit comes free,
//! with a token above every earlier grant.

mod common;

use common::cluster::{one_at_a_time, runtime, Cluster};
use common::{phase, u64_of, wait_for};
use leasehold_client::Client;
use serde_json::Value;
use std::time::Duration;

const NAME: &str = "failover/slots";

/// The grants of `NAME` as the node answering `get` shows them: (lease, token).
fn grants(cluster: &Cluster) -> Vec<(u64, u64)> {
    let shown = cluster.ok_json(&["get", NAME, "--json"]);
    assert_eq!(shown["kind"], "semaphore", "{shown}");
    let holders = shown["holders"].as_array().expect("holders").iter();
    holders
        .map(|h| (u64_of(h, "lease"), u64_of(h, "token")))
        .collect()
}

fn waiters(cluster: &Cluster) -> Vec<u64> {
    let shown: Value = cluster.ok_json(&["get", NAME, "--json"]);
    let leases = shown["waiter_leases"].as_array().expect("waiter_leases");
    leases.iter().map(|l| l.as_u64().expect("lease")).collect()
}

#[test]
fn t251_a_semaphore_keeps_its_grants_and_its_queue_across_a_failover() {
    let _serial = one_at_a_time();
    let mut cluster = Cluster::start(3);
    let (old, old_term) = cluster.leader();

    phase("two grants of a semaphore of 2, and a waiter queued behind them");
    let acquire = ["acquire", NAME, "--limit", "2", "--ttl", "60s", "--json"];
    let first = cluster.ok_json(&acquire);
    let second = cluster.ok_json(&acquire);
    let before = grants(&cluster);
    assert_eq!(before.len(), 2, "{before:?}");
    // The waiter is the library's, as `t90`'s, which rides through a
    // failover; the one-shot `acquire --wait` fails fast (exit 5) when its
    // server dies, by design (README, exit codes).
    let endpoints = cluster.endpoint_list();
    let rt = runtime();
    let (sender, granted) = std::sync::mpsc::channel();
    rt.spawn(async move {
        let client = Client::connect(&endpoints).await.expect("connect");
        let lease = client
            .lease(Duration::from_secs(10))
            .grant()
            .await
            .expect("grant");
        let request = lease
            .lock(NAME)
            .semaphore(2, 1)
            .wait(Duration::from_secs(30));
        let acquired = request.acquire().await;
        let _ = sender.send((acquired, lease));
    });
    let queued = wait_for("the waiter to be queued", Duration::from_secs(10), || {
        let queued = waiters(&cluster);
        (queued.len() == 1).then_some(queued)
    });

    phase("SIGKILL the leader; the new one shows the same grants and queue");
    cluster.kill9(old);
    let (new, _term) = cluster.leader_after(old_term);
    assert_ne!(new, old);
    assert_eq!(
        grants(&cluster),
        before,
        "the grants and their tokens survive"
    );
    assert_eq!(waiters(&cluster), queued, "the waiter keeps its place");

    phase("a release lets the waiter in, with a token above both grants");
    let (lease, token) = (u64_of(&first, "lease"), u64_of(&first, "token"));
    let release = [
        "release",
        NAME,
        "--lease",
        &lease.to_string(),
        "--token",
        &token.to_string(),
    ];
    cluster.cli(&release).expect_code(0);
    let (acquired, _lease) = granted
        .recv_timeout(Duration::from_secs(30))
        .expect("the waiter got no answer");
    let guard = acquired.expect("the waiter was granted");
    let granted_token = guard.fence().expect("still held").0;
    assert!(
        granted_token > token && granted_token > u64_of(&second, "token"),
        "{granted_token} is not above {token} and {}",
        u64_of(&second, "token")
    );
    let after: Vec<u64> = grants(&cluster).iter().map(|(_, t)| *t).collect();
    assert_eq!(after, [u64_of(&second, "token"), granted_token]);
}
