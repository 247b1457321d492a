//! A rolling upgrade of a three-node cluster (issue 19). The cluster starts
//! as "the previous release": this build told to speak Raft protocol 1
//! (`serve --protocol-version 1`, hidden), which also refuses log entries
//! holding a command of protocol 2, as that release, which cannot decode
//! them, does. Then one node at a time is stopped and started again on the
//! new protocol, on the same data dir, while fenced workers acquire, write
//! and release throughout.
//!
//! Asserted: the workers are served after every step (grants continue, and
//! every fenced write carries a token above the one before: no two holders
//! overlapped); a semaphore (a protocol-2 command) is refused with a
//! sentence naming the node that holds the upgrade back while any node
//! speaks protocol 1; once the last node is upgraded the leader's status
//! shows protocol 2 for every member and the semaphore is granted.

mod common;

use common::cluster::workload::{Shape, Workload};
use common::cluster::{one_at_a_time, runtime, Cluster};
use common::{phase, wait_for};
use std::time::Duration;

/// Bound on a step of the upgrade (a restart, catching up).
const STEP: Duration = Duration::from_secs(30);
/// Grants the workers must get after each step.
const GRANTS_PER_STEP: usize = 5;

const SHAPE: Shape = Shape {
    workers: 3,
    locks: 2,
    ttl: Duration::from_secs(3),
    wait: Duration::from_secs(2),
    prefix: "upgrade/lock",
};

/// A semaphore's acquire: a command of protocol 2.
const SEMAPHORE: [&str; 7] = [
    "acquire",
    "upgrade/slots",
    "--limit",
    "2",
    "--ttl",
    "30s",
    "--json",
];

/// While a node speaks protocol 1 (those after `upgraded`), the semaphore
/// is refused (exit 5) by the leader, naming one of them, why and what to
/// do.
fn assert_semaphore_refused(cluster: &Cluster, upgraded: u64) {
    let args: Vec<&str> = SEMAPHORE
        .iter()
        .copied()
        .chain(["--timeout", "2s"])
        .collect();
    let run = cluster.cli(&args);
    run.expect_code(5);
    assert!(
        run.stderr.contains("needs Raft protocol 2 on every node")
            && run.stderr.contains("speaks protocol 1")
            && run.stderr.contains("finish the rolling upgrade"),
        "{}",
        run.stderr
    );
    let named: u64 = run
        .stderr
        .split("but node ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|id| id.parse().ok())
        .expect("the refusal names a node");
    assert!(named > upgraded, "{}", run.stderr);
}

#[test]
fn t263_a_rolling_upgrade_keeps_serving_and_holds_back_newer_commands() {
    let _serial = one_at_a_time();
    let mut cluster = Cluster::start_with_args(3, &["--protocol-version", "1"]);
    let rt = runtime();
    let shown = cluster.ok_json(&["status", "--json"]);
    assert_eq!(shown["protocol"], 1, "{shown}");
    let mut load = Workload::start(&rt, SHAPE, &cluster.endpoint_list());
    wait_for("grants on the previous release", STEP, || {
        (load.grants_where(|_| true).len() >= GRANTS_PER_STEP).then_some(())
    });
    assert_semaphore_refused(&cluster, 0);

    for id in [1, 2, 3] {
        phase(&format!("upgrade node {id}"));
        cluster.kill9(id);
        cluster.set_serve_args(id, &[]);
        cluster.restart(id);
        let upgraded_at = std::time::Instant::now();
        cluster.wait_leader(STEP);
        let others_applied = (1..=3)
            .filter(|&other| other != id)
            .filter_map(|other| cluster.status(other))
            .map(|status| status.applied_index)
            .max()
            .expect("the other nodes answer");
        wait_for("the upgraded node to catch up", STEP, || {
            (cluster.status(id)?.applied_index >= others_applied).then_some(())
        });
        wait_for("grants after the step", STEP, || {
            let after = load.grants_where(|g| g.asked > upgraded_at).len();
            (after >= GRANTS_PER_STEP).then_some(())
        });
        if id < 3 {
            assert_semaphore_refused(&cluster, 0);
        }
    }

    phase("every node speaks protocol 2: the leader shows it, and the semaphore is granted");
    wait_for(
        "the leader to show protocol 2 for every member",
        STEP,
        || {
            let (leader, _) = cluster.try_leader()?;
            let shown = cluster.cli_on(leader, &["status", "--json"]).json();
            let protocols: Vec<u64> = shown["members"]
                .as_array()?
                .iter()
                .filter_map(|member| member["protocol"].as_u64())
                .collect();
            (shown["protocol"] == 2 && protocols == [2, 2, 2]).then_some(())
        },
    );
    let args: Vec<&str> = SEMAPHORE
        .iter()
        .copied()
        .chain(["--timeout", "15s"])
        .collect();
    let granted = cluster.cli(&args).expect_code(0).json();
    assert!(granted["token"].as_u64().is_some(), "{granted}");

    load.stop(&rt);
    load.check_fencing();
    load.check_state(&cluster);
    let errors = load.errors();
    eprintln!(
        "measured: {} grants through the upgrade; failed calls by kind: {errors:?}",
        load.grants_where(|_| true).len()
    );
}
