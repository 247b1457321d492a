//! `leasehold bench --workload storm`: the mass expiry the scale issue
//! measures, against a real server. The leases are ended by the server
//! alone (their attached renewers stop; nothing revokes them), every lock
//! is free at the end, the probes ran before and through the storm, and a
//! lease's end writes a bounded number of "lock freed" lines and counts the
//! rest on its own line. The latency figures are the benchmark's, reported
//! in the note, never asserted here.

mod common;

use common::{u64_of, Server};
use serde_json::Value;

/// The server's JSON log lines with `message`.
fn logged(server: &Server, message: &str) -> Vec<Value> {
    server
        .log_text()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["fields"]["message"] == message || line["message"] == message)
        .collect()
}

#[test]
fn t241_storm_lets_the_server_expire_every_lease_and_reports_the_probes() {
    let server = Server::start_with_env(&[("LEASEHOLD_LOG_FORMAT", "json")]);
    let pid = server.pid().to_string();
    let report = server.ok_json(&[
        "bench",
        "--workload",
        "storm",
        "--leases",
        "5",
        "--locks",
        "20",
        "--ttl",
        "1",
        "--clients",
        "8",
        "--server-pid",
        &pid,
        "--json",
    ]);
    assert_eq!(report["workload"], "storm", "{report}");
    assert_eq!(u64_of(&report, "locks_held"), 100, "{report}");
    assert_eq!(u64_of(&report, "leases_left"), 0, "{report}");
    // Nothing can be free before the leases' ttl from their last renewal,
    // which came at most a third of the ttl before the renewers stopped.
    assert!(u64_of(&report, "freed_after_ms") >= 600, "{report}");
    for phase in ["baseline", "storm"] {
        assert!(u64_of(&report[phase], "cycles") > 0, "{phase}: {report}");
    }
    let locks = server.ok_json(&["ls", "--json"]);
    assert_eq!(
        locks.as_array().map(Vec::len),
        Some(0),
        "locks left: {locks}"
    );

    let expired = logged(&server, "lease expired");
    assert_eq!(
        expired.len(),
        5,
        "the server expired each lease: {expired:?}"
    );
    for line in &expired {
        let fields = if line["fields"].is_object() {
            &line["fields"]
        } else {
            line
        };
        assert_eq!(fields["locks_freed"], 20, "{line}");
        assert_eq!(fields["lock_lines_skipped"], 12, "{line}");
    }
    let by_expiry = logged(&server, "lock freed")
        .into_iter()
        .filter(|line| line.to_string().contains("lease_expired"))
        .count();
    assert_eq!(by_expiry, 5 * 8, "eight lines per lease's end");
}
