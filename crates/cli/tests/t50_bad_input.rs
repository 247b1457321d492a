//! Boundary checks: malformed names, out-of-range ttls, unknown leases and
//! oversize requests are refused with an error that names the field and the
//! limit, and the server keeps serving afterwards.

mod common;

use common::Server;
use leasehold_proto::v1::lease_client::LeaseClient;
use leasehold_proto::v1::lock_client::LockClient;
use leasehold_proto::v1::{AcquireRequest, GrantRequest};

/// Asserts a usage error (exit 2) whose message names every one of `words`.
fn assert_invalid(server: &Server, args: &[&str], words: &[&str]) {
    let run = server.cli(args);
    run.expect_code(2);
    assert!(run.stdout.is_empty(), "an error printed data: {run:?}");
    for word in words {
        assert!(
            run.stderr.contains(word),
            "stderr does not name {word:?}: {:?}",
            run.stderr
        );
    }
}

#[test]
fn t50_bad_input() {
    let server = Server::start();

    eprintln!("phase: malformed names");
    assert_invalid(&server, &["acquire", "", "--ttl", "10s"], &["name"]);
    let long = "a".repeat(600);
    assert_invalid(
        &server,
        &["acquire", &long, "--ttl", "10s"],
        &["name", "NAME_BYTES_MAX"],
    );
    assert_invalid(
        &server,
        &["acquire", "bad\u{1}name", "--ttl", "10s"],
        &["name"],
    );

    eprintln!("phase: ttls out of range");
    assert_invalid(
        &server,
        &["acquire", "ok/name", "--ttl", "0s"],
        &["ttl_ms", "TTL_MS_MIN"],
    );
    assert_invalid(
        &server,
        &["acquire", "ok/name", "--ttl", "2d"],
        &["ttl_ms", "TTL_MS_MAX"],
    );
    assert_invalid(
        &server,
        &["lease", "grant", "--ttl", "500ms"],
        &["ttl_ms", "TTL_MS_MIN"],
    );

    eprintln!("phase: a malformed duration is a usage error that names the flag");
    assert_invalid(
        &server,
        &["acquire", "ok/name", "--ttl", "10parsecs"],
        &["--ttl"],
    );

    eprintln!("phase: unknown leases");
    let run = server.cli(&["release", "ok/name", "--lease", "987654321", "--token", "1"]);
    run.expect_code(4);
    let run = server.cli(&["lease", "keepalive", "987654321", "--once"]);
    run.expect_code(4);
    assert!(run.stderr.contains("987654321"), "{run:?}");

    eprintln!("phase: the refused acquires left no lock and no lease behind");
    let listed = server.ok_json(&["ls", "--json"]);
    assert_eq!(listed.as_array().map(Vec::len), Some(0), "{listed}");
    let status = server.ok_json(&["status", "--json"]);
    assert_eq!(
        status["leases"].as_u64(),
        Some(0),
        "fresh leases were not revoked: {status}"
    );

    eprintln!("phase: oversize requests through the CLI");
    let huge = format!("blob={}", "x".repeat(100 * 1024));
    let run = server.cli(&["acquire", "ok/huge", "--ttl", "10s", "--metadata", &huge]);
    assert!(
        run.code == 1 || run.code == 2,
        "oversize metadata not refused: {run:?}"
    );
    let huge_name = "n".repeat(100 * 1024);
    let run = server.cli(&["acquire", &huge_name, "--ttl", "10s"]);
    assert!(
        run.code == 1 || run.code == 2,
        "oversize name not refused: {run:?}"
    );

    eprintln!("phase: oversize requests through the generated client");
    oversize_raw(&server.endpoint());

    eprintln!("phase: the server still serves");
    let status = server.ok_json(&["status", "--json"]);
    assert_ne!(status["leader"].as_u64(), Some(0), "{status}");
    server.ok_json(&["acquire", "ok/after", "--ttl", "10s", "--json"]);
}

fn oversize_raw(endpoint: &str) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let mut leases = LeaseClient::connect(endpoint.to_owned())
            .await
            .expect("connect");
        let mut locks = LockClient::connect(endpoint.to_owned())
            .await
            .expect("connect");
        let lease = leases
            .grant(GrantRequest {
                ttl_ms: 10_000,
                ..Default::default()
            })
            .await
            .expect("grant")
            .into_inner()
            .lease;
        let acquire = |name: String, value: String| AcquireRequest {
            lease,
            name,
            metadata: [("blob".to_owned(), value)].into_iter().collect(),
            ..Default::default()
        };
        for (what, request) in [
            ("1 MiB name", acquire("n".repeat(1 << 20), String::new())),
            (
                "1 MiB metadata",
                acquire("ok/raw".into(), "v".repeat(1 << 20)),
            ),
            (
                "8 MiB metadata",
                acquire("ok/raw".into(), "v".repeat(8 << 20)),
            ),
        ] {
            let status = locks.acquire(request).await.expect_err(what);
            eprintln!("{what}: {:?} {}", status.code(), status.message());
            assert!(
                matches!(
                    status.code(),
                    tonic::Code::InvalidArgument
                        | tonic::Code::ResourceExhausted
                        | tonic::Code::OutOfRange
                ),
                "{what} refused with an unexpected status: {status:?}"
            );
        }
    });
}
