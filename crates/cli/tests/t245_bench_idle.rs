//! `leasehold bench --workload idle`: connections that do nothing, against
//! a real server. The report counts the sockets the server holds (its own
//! gauge) and, with `--server-pid`, reads its memory at each step. The
//! figures themselves (bytes per connection) are the benchmark's, reported
//! in the note, never asserted here.

mod common;

use common::{u64_of, Server};

#[test]
fn t245_idle_reports_the_connections_the_server_holds_and_its_memory() {
    // A handshake deadline past the run, so the silent sockets are all
    // still there when the HTTP/2 ones are counted.
    let server = Server::start_with_env(&[("LEASEHOLD_HANDSHAKE_TIMEOUT", "120s")]);
    let pid = server.pid().to_string();
    let report = server.ok_json(&[
        "bench",
        "--workload",
        "idle",
        "--clients",
        "50",
        "--server-pid",
        &pid,
        "--json",
    ]);
    assert_eq!(report["workload"], "idle", "{report}");
    assert_eq!(u64_of(&report, "sockets_per_kind"), 50, "{report}");
    assert_eq!(u64_of(&report, "silent_held"), 50, "{report}");
    assert_eq!(u64_of(&report, "h2_held"), 50, "{report}");
    let before = u64_of(&report, "server_rss_before_bytes");
    let both = u64_of(&report, "server_rss_both_bytes");
    assert!(before > 0 && both > 0, "{report}");

    // The sockets are closed with the run: the server is left as it was.
    server.cli(&["status"]).expect_code(0);
}

#[test]
fn t245_idle_needs_a_plaintext_endpoint() {
    let server = Server::start();
    let run = server.cli(&[
        "bench",
        "--endpoints",
        "https://127.0.0.1:1",
        "--workload",
        "idle",
        "--clients",
        "1",
    ]);
    assert_eq!(run.code, 2, "a usage error: {run:?}");
    assert!(run.stderr.contains("plaintext endpoint"), "{run:?}");
}
