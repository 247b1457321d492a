//! Lost quorum for good (issue 19): three nodes, two wiped; the survivor,
//! restarted with `serve --force-new-cluster --revision-gap G`, becomes a
//! one-member cluster from its own data, says so loudly, keeps the fenced
//! store (a holder from before the disaster is refused), hands out tokens
//! above every token before, and takes a wiped member back with `member
//! add` (the member joins with `--join` on an empty data dir).

mod common;

use common::cluster::{one_at_a_time, Cluster, Formation};
use common::wait_for;
use std::time::Duration;

/// Bound on a recovery step (start-up, an election).
const STEP: Duration = Duration::from_secs(30);

#[test]
fn t262_a_survivor_forms_a_new_cluster_above_every_earlier_token() {
    let _serial = one_at_a_time();
    let mut cluster = Cluster::start(3);
    cluster.wait_leader(STEP);
    let held = cluster.ok_json(&["acquire", "dr/held", "--ttl", "60s", "--json"]);
    let token = held["token"].as_u64().unwrap().to_string();
    let put = [
        "fenced",
        "put",
        "dr/config",
        "before",
        "--lock",
        "dr/held",
        "--token",
        &token,
    ];
    cluster.cli(&put).expect_code(0);
    // The survivor has everything the cluster acknowledged.
    let before = cluster.ok_json(&["status", "--json"])["revision"]
        .as_u64()
        .unwrap();
    wait_for("node 1 to apply it all", STEP, || {
        (cluster.status(1)?.revision >= before).then_some(())
    });

    for id in [1, 2, 3] {
        cluster.kill9(id);
    }
    cluster.wipe(2);
    cluster.wipe(3);
    cluster.set_formation(
        1,
        Formation::ForceNewCluster {
            revision_gap: 1_000,
        },
    );
    cluster.restart(1);
    let log = cluster.log_text(1);
    assert!(log.contains("FORCED A NEW CLUSTER"), "{log}");
    wait_for("node 1 to lead alone", STEP, || {
        let status = cluster.status(1)?;
        (status.state == "Leader" && status.voters() == 1).then_some(())
    });

    // Tokens above every earlier one; the old holder's write refused.
    cluster.cli_on(1, &put).expect_code(4);
    let kept = cluster.ok_json(&["fenced", "get", "dr/config", "--json"]);
    assert_eq!(kept["value"], "before", "{kept}");
    let after = cluster.ok_json(&["acquire", "dr/held", "--json"]);
    assert!(after["token"].as_u64().unwrap() > before + 1_000, "{after}");

    // A wiped member comes back by `member add`, not with its old data.
    cluster.set_formation(2, Formation::Join);
    cluster.restart(2);
    let advertised = cluster.advertised(2);
    cluster
        .cli_on(1, &["member", "add", "2", &advertised])
        .expect_code(0);
    wait_for("node 2 to follow", STEP, || {
        let status = cluster.status(2)?;
        (status.leader == 1 && status.revision >= before + 1_000).then_some(())
    });
}

#[test]
fn t262_a_refused_force_leaves_the_data_dir_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut node = common::Server::start_in(&data, common::free_port());
    node.ok_json(&["acquire", "dr/x", "--json"]);
    node.kill9();
    let serve = |extra: &[&str], data: &std::path::Path| {
        let mut command = std::process::Command::new(common::BIN);
        command
            .args(["serve", "--data-dir"])
            .arg(data)
            .arg("--force-new-cluster");
        command.args(extra).output().expect("run serve")
    };
    for (extra, said) in [
        (&[][..], "name a token floor"),
        (&["--token-floor", "1"][..], "not above"),
    ] {
        let refused = serve(extra, &data);
        assert_eq!(refused.status.code(), Some(2), "{extra:?}");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(stderr.contains(said), "{extra:?}: {stderr}");
    }
    // Untouched: still there, nothing moved aside.
    assert!(data.join("leasehold.redb").exists());
    let siblings = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(siblings, 1, "nothing was moved aside");
    let empty = dir.path().join("empty");
    let refused = serve(&["--revision-gap", "10"], &empty);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("holds no node's data"));
}
