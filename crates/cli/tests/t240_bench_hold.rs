//! `leasehold bench --workload hold`: the tool that measures what held
//! state costs the server (issue "Scale and speed"). Against a real server:
//! - every lease holds every lock it asked for while the server's RSS is
//!   read, and the report's counts, rates and memory figures are there;
//! - the revokes at the end leave nothing held under bench's prefix;
//! - a shape beyond the server's limits is refused before anything is sent,
//!   naming the limit; a pid that is no process is named.
//!
//! The figures themselves (bytes per lock, load rate) are the benchmark's,
//! reported in the note, never asserted here.

mod common;

use common::{u64_of, Server};

#[test]
fn t240_hold_builds_the_state_reports_its_memory_and_revokes_it() {
    let server = Server::start();
    let pid = server.pid().to_string();
    let report = server.ok_json(&[
        "bench",
        "--workload",
        "hold",
        "--leases",
        "20",
        "--locks",
        "50",
        "--clients",
        "16",
        "--server-pid",
        &pid,
        "--json",
    ]);
    assert_eq!(report["workload"], "hold", "{report}");
    assert_eq!(u64_of(&report, "locks_held"), 1_000, "{report}");
    assert_eq!(u64_of(&report, "revoke_failures"), 0, "{report}");
    assert!(report["acquires_per_s"].as_f64().unwrap() > 0.0, "{report}");
    let before = u64_of(&report, "server_rss_before_bytes");
    let held = u64_of(&report, "server_rss_held_bytes");
    let settled = u64_of(&report, "server_rss_settled_bytes");
    assert!(before > 0 && held > 0 && settled > 0, "{report}");
    assert!(report["bytes_per_lock"].as_f64().is_some(), "{report}");
    let locks = server.ok_json(&["ls", "--json"]);
    assert_eq!(
        locks.as_array().map(Vec::len),
        Some(0),
        "the revokes left locks held: {locks}"
    );
}

/// `leasehold bench --workload hold` with `extra` flags, one lease of one
/// lock unless they say otherwise.
fn hold_run(server: &Server, extra: &[&str]) -> common::Run {
    let mut args = vec!["bench", "--workload", "hold", "--clients", "1"];
    args.extend_from_slice(extra);
    server.cli(&args)
}

#[test]
fn t240_hold_refuses_a_shape_beyond_the_limits_and_a_missing_pid() {
    let server = Server::start();
    for (extra, message) in [
        (
            &["--leases", "1", "--locks", "5000"][..],
            "LOCKS_PER_LEASE_MAX (got 5000)",
        ),
        (
            &[
                "--leases",
                "1",
                "--locks",
                "1",
                "--server-pid",
                "4294967295",
            ][..],
            "--server-pid 4294967295",
        ),
    ] {
        let run = hold_run(&server, extra);
        run.expect_code(2);
        assert!(run.stderr.contains(message), "{extra:?}: {}", run.stderr);
    }
}
