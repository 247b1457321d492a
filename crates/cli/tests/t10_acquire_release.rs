//! Acquire, busy, release, re-acquire: the basic life of a lock through the
//! CLI, with exit codes and the JSON contract of `acquire`.

mod common;

use common::Server;

#[test]
fn t10_acquire_release() {
    let server = Server::start();

    eprintln!("phase: acquire with a fresh lease");
    let a = server.ok_json(&["acquire", "jobs/a", "--ttl", "30s", "--json"]);
    assert_eq!(a["lock"], "jobs/a");
    assert_eq!(a["ttl_ms"], 30_000);
    let a_lease = a["lease"].as_u64().expect("lease");
    let a_token = a["token"].as_u64().expect("token");
    assert!(a_lease != 0 && a_token != 0, "{a}");
    assert!(a["revision"].as_u64().expect("revision") >= a_token, "{a}");

    eprintln!("phase: a second lease is refused with exit 3 (busy)");
    let busy = server.cli(&["acquire", "jobs/a", "--ttl", "30s", "--json"]);
    busy.expect_code(3);
    // Issue 15: a --json failure prints its error as JSON on stdout too.
    assert_eq!(busy.json()["error"]["reason"], "Busy", "{busy:?}");
    assert!(busy.stderr.contains("busy"), "{busy:?}");

    eprintln!("phase: get shows the holder");
    let held = server.ok_json(&["get", "jobs/a", "--json"]);
    assert_eq!(held["token"].as_u64(), Some(a_token));
    assert_eq!(held["lease"].as_u64(), Some(a_lease));
    assert_eq!(held["waiters"], 0);

    eprintln!("phase: release by the holder");
    server
        .cli(&[
            "release",
            "jobs/a",
            "--lease",
            &a_lease.to_string(),
            "--token",
            &a_token.to_string(),
        ])
        .expect_code(0);

    eprintln!("phase: acquire again gets a higher token");
    let b = server.ok_json(&["acquire", "jobs/a", "--ttl", "30s", "--json"]);
    let b_token = b["token"].as_u64().expect("token");
    assert!(
        b_token > a_token,
        "token did not increase: {a_token} then {b_token}"
    );
    assert_ne!(b["lease"].as_u64(), Some(a_lease));

    eprintln!("phase: ls lists it with the new holder");
    let listed = server.ok_json(&["ls", "jobs/", "--json"]);
    let locks = listed.as_array().expect("ls --json prints an array");
    assert_eq!(locks.len(), 1, "{listed}");
    assert_eq!(locks[0]["lock"], "jobs/a");
    assert_eq!(locks[0]["token"].as_u64(), Some(b_token));
    for field in ["lease", "owner", "lease_remaining_ms", "waiters", "fenced"] {
        assert!(
            locks[0].get(field).is_some(),
            "ls --json lacks {field}: {listed}"
        );
    }
    let table = server.cli(&["ls"]).expect_code(0).stdout.clone();
    assert!(table.starts_with("LOCK"), "{table}");
    assert!(table.contains("jobs/a"), "{table}");
}
