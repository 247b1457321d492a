//! A failed fsync (EIO) of the log, on a real `leasehold serve` with the
//! test-only hook `LEASEHOLD_TEST_FSYNC_FAIL_AFTER=N` (fsync N and later
//! fail). The write whose fsync failed is never acknowledged; every later
//! write is refused with Unavailable and a sentence naming the data dir and
//! "restart the node" (no retry of a failed fsync: fsyncgate); one error
//! line is logged; `/readyz` says why; reads (get, ls, status) keep working
//! on this single-node cluster; and a restart without the hook recovers
//! every acknowledged grant, with new tokens above all of them.

mod common;
#[path = "common/disk.rs"]
mod disk;

use common::{free_port, phase, u64_of, Server};
use disk::{assert_all_held, readyz, try_acquire, Held};
use leasehold_server::storage::FSYNC_FAIL_AFTER_ENV;

/// The first failing fsync: past the start-up's appends (election, the
/// membership), in the middle of the grants below.
const FAIL_AFTER: &str = "12";
/// Acquires tried before giving up on seeing the fault (each is two writes).
const ACQUIRES_MAX: usize = 40;
/// Exit code of "service unavailable".
const EXIT_UNAVAILABLE: i32 = 5;

#[test]
fn a_failed_fsync_stops_writes_keeps_reads_and_a_restart_recovers() {
    phase("grant until an fsync fails");
    let mut server = Server::start_with_env(&[(FSYNC_FAIL_AFTER_ENV, FAIL_AFTER)]);
    let log_dir = server.data_dir.join("log").display().to_string();
    let mut held: Vec<Held> = Vec::new();
    let mut refusal = None;
    for i in 0..ACQUIRES_MAX {
        match try_acquire(&server, &format!("t221/lock-{i}")) {
            Ok(grant) => held.push(grant),
            Err(failed) => {
                refusal = Some(failed);
                break;
            }
        }
    }
    let (code, stderr) = refusal.expect("no write failed: the fsync hook did not fire");
    eprintln!("refused after {} grants: {stderr}", held.len());
    assert!(!held.is_empty(), "the hook fired before any grant");
    assert_eq!(code, EXIT_UNAVAILABLE, "{stderr}");
    assert!(stderr.contains(&log_dir), "{stderr}");
    assert!(stderr.contains("restart the node"), "{stderr}");

    phase("every later write is refused the same way, without a retried fsync");
    let (code, stderr) = try_acquire(&server, "t221/after").unwrap_err();
    assert_eq!(code, EXIT_UNAVAILABLE, "{stderr}");
    assert!(stderr.contains("restart the node"), "{stderr}");
    let lease = held[0].1;
    let run = server.cli(&["--timeout", "5s", "lease", "revoke", &lease.to_string()]);
    assert_eq!(run.code, EXIT_UNAVAILABLE, "{run:?}");

    phase("reads keep working: get, ls, status");
    assert_all_held(&server, &held);
    let listed = server.ok_json(&["ls", "t221/", "--json"]);
    assert!(
        listed.to_string().contains(&held[0].0),
        "ls lost {}: {listed}",
        held[0].0
    );
    let status = server.ok_json(&["status", "--json"]);
    assert_eq!(u64_of(&status, "node_id"), 1, "{status}");

    phase("/readyz says why, and the log has one error line for it");
    let (code, body) = readyz(&server);
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("fsync") && body.contains(&log_dir), "{body}");
    let log = server.log_text();
    let errors = log
        .lines()
        .filter(|line| line.contains("ERROR") && line.contains("accepts no more writes"))
        .count();
    assert_eq!(errors, 1, "error lines about the failed fsync:\n{log}");

    phase("a restart without the hook recovers every acknowledged grant");
    server.kill9();
    let restarted = Server::start_in(&server.data_dir, free_port());
    assert_all_held(&restarted, &held);
    let highest = held.iter().map(|h| h.2).max().unwrap();
    let fresh = try_acquire(&restarted, "t221/fresh").expect("writes after the restart");
    assert!(fresh.2 > highest, "token {} not above {highest}", fresh.2);
    let (code, body) = readyz(&restarted);
    assert_eq!(code, 200, "{body}");
}
