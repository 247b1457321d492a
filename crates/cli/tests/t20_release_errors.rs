//! Loud release (docs/DESIGN.md §2.7): a wrong token or an unknown name is an
//! ownership error (exit 4) that says which, including the holder's token
//! and the nearby name a mistyped release was probably meant for.

mod common;

use common::{numbers, Server};

#[test]
fn t20_release_errors() {
    let server = Server::start();
    let held = server.ok_json(&["acquire", "jobs/nightly", "--ttl", "30s", "--json"]);
    let lease = held["lease"].as_u64().expect("lease").to_string();
    let token = held["token"].as_u64().expect("token");

    eprintln!("phase: release with a wrong token");
    let wrong = (token + 1_000).to_string();
    let run = server.cli(&[
        "release",
        "jobs/nightly",
        "--lease",
        &lease,
        "--token",
        &wrong,
    ]);
    run.expect_code(4);
    assert!(
        numbers(&run.stderr).contains(&token),
        "the error does not name the holder's token {token}: {:?}",
        run.stderr
    );

    eprintln!("phase: release under another lease with the right token");
    let other = server.ok_json(&["lease", "grant", "--ttl", "30s", "--json"]);
    let other_lease = other["lease"].as_u64().expect("lease").to_string();
    let run = server.cli(&[
        "release",
        "jobs/nightly",
        "--lease",
        &other_lease,
        "--token",
        &token.to_string(),
    ]);
    run.expect_code(4);

    eprintln!("phase: release of a near-miss name");
    let run = server.cli(&[
        "release",
        "jobs/nigthly",
        "--lease",
        &lease,
        "--token",
        &token.to_string(),
    ]);
    run.expect_code(4);
    let lower = run.stderr.to_lowercase();
    assert!(
        lower.contains("no lock") || lower.contains("no such lock"),
        "{run:?}"
    );
    assert!(
        run.stderr.contains("jobs/nightly"),
        "nearby name not suggested: {run:?}"
    );

    eprintln!("phase: release of an unrelated unknown name");
    let run = server.cli(&[
        "release",
        "zzz/unknown",
        "--lease",
        &lease,
        "--token",
        &token.to_string(),
    ]);
    run.expect_code(4);

    eprintln!("phase: the lock is still held by the original holder");
    let lock = server.ok_json(&["get", "jobs/nightly", "--json"]);
    assert_eq!(lock["token"].as_u64(), Some(token));
}
