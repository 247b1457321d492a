//! Backups (issue 19): `snapshot save` under load writes a consistent copy
//! from the leader that covers every write acknowledged before it, and
//! `snapshot status` says what it covers; a damaged or foreign file is
//! refused with a sentence (exit 1), never read as a state.

mod common;

use common::process::{args, read_ready, sh};
use common::{wait_for, Server};
use std::time::Duration;

#[test]
fn t260_a_backup_under_load_covers_what_was_acknowledged_and_damage_is_refused() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let ready = dir.path().join("ready");
    let tail = sh(&format!(
        "echo $LEASEHOLD_TOKEN > {}; exec sleep 60",
        ready.display()
    ));
    let mut holder = server.spawn(&args(&["lock", "backup/held"], &tail));
    let held_token: u64 = wait_for("the holder", Duration::from_secs(15), || read_ready(&ready))
        .parse()
        .unwrap();
    let acked = server.ok_json(&["acquire", "backup/acked", "--limit", "3", "--json"]);
    let acked_revision = acked["revision"].as_u64().unwrap();

    // Load while saving: locks taken and let go, one after another.
    let file = dir.path().join("backup.lhb");
    let file_arg = file.to_str().unwrap();
    let saved = std::thread::scope(|scope| {
        let load = scope.spawn(|| {
            for _ in 0..10 {
                server
                    .cli(&["lock", "backup/churn", "--", "true"])
                    .expect_code(0);
            }
        });
        let saved = server.ok_json(&["snapshot", "save", file_arg, "--json"]);
        load.join().unwrap();
        saved
    });
    assert!(
        saved["revision"].as_u64().unwrap() >= acked_revision,
        "{saved}"
    );

    let status = server.ok_json(&["snapshot", "status", file_arg, "--json"]);
    assert_eq!(status["checksum_ok"], true, "{status}");
    assert_eq!(status["revision"], saved["revision"]);
    assert_eq!(status["decoded_revision"], saved["revision"]);
    assert!(status["locks"].as_u64().unwrap() >= 1, "{status}");
    assert!(status["pools"].as_u64().unwrap() >= 1, "{status}");
    assert!(held_token <= status["revision"].as_u64().unwrap());

    // One flipped byte in the state: refused, naming the damage.
    let mut bytes = std::fs::read(&file).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    let damaged = dir.path().join("damaged.lhb");
    std::fs::write(&damaged, &bytes).unwrap();
    let refused = server.cli(&["snapshot", "status", damaged.to_str().unwrap()]);
    refused.expect_code(1);
    assert!(
        refused.stderr.contains("damaged") && refused.stderr.contains("crc32"),
        "{}",
        refused.stderr
    );
    let foreign = server.cli(&["snapshot", "status", ready.to_str().unwrap()]);
    foreign.expect_code(1);
    assert!(
        foreign.stderr.contains("not a Leasehold backup"),
        "{}",
        foreign.stderr
    );

    holder.kill().expect("stop the holder");
    holder.wait().expect("reaped");
}
