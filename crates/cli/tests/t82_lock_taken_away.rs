//! `lock` when the lock is taken away while its lease lives (seed 001,
//! "prove the fix" 5): an operator's plain force release (without
//! `--revoke-lease`) reaches the holder within one renewal interval; `lock`
//! stops the command (SIGTERM to its group) and exits 6 naming who freed
//! the lock and why, and stops renewing the lease, so the next holder is the
//! only one. Before, `lock` and its command ran on for good, renewing a
//! lease that held nothing, while a second client acquired the lock.

mod common;

use common::process::{args, read_ready, sh};
use common::{finish, phase, u64_of, wait_for, Server};
use std::time::{Duration, Instant};

#[test]
fn t82_a_force_released_lock_stops_the_command_within_one_interval() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let (ready, got) = (dir.path().join("ready"), dir.path().join("got"));
    let script = format!(
        "trap 'echo TERM > {}; exit 143' TERM; echo up > {}; while true; do sleep 0.1; done",
        got.display(),
        ready.display()
    );
    let tail = sh(&script);
    // ttl 3 s: renewed every second.
    let interval = Duration::from_secs(1);
    let head = ["lock", "g/fr", "--ttl", "3s", "--fenced", "--grace", "1s"];
    let child = server.spawn(&args(&head, &tail));
    wait_for("the command to start", Duration::from_secs(10), || {
        read_ready(&ready)
    });
    let holder = server.ok_json(&["get", "g/fr", "--json"]);
    let (lease, token) = (u64_of(&holder, "lease"), u64_of(&holder, "token"));

    phase("an operator force-releases the lock; the lease lives on");
    let token_arg = token.to_string();
    let freed = Instant::now();
    server
        .cli(&[
            "force-release",
            "g/fr",
            "--token",
            &token_arg,
            "--reason",
            "test drill",
        ])
        .expect_code(0);
    let run = finish(child, "lock to stop the command", Duration::from_secs(10));
    let took = freed.elapsed();
    eprintln!(
        "measured: lock exited {} ms after the force release (renewal interval {} ms)",
        took.as_millis(),
        interval.as_millis()
    );
    run.expect_code(6);
    assert!(run.stderr.contains("force-released by"), "{}", run.stderr);
    assert!(run.stderr.contains("test drill"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&got).unwrap().trim(), "TERM");
    assert!(
        took < interval + Duration::from_millis(500),
        "the loss took {took:?}, more than one interval + 500 ms"
    );

    phase("the lease is no longer renewed, and the next holder is alone");
    let lease_arg = lease.to_string();
    wait_for("the lease to be gone", Duration::from_secs(5), || {
        (server.cli(&["lease", "get", &lease_arg]).code == 4).then_some(())
    });
    let next = server.ok_json(&["acquire", "g/fr", "--ttl", "5s", "--json"]);
    assert!(u64_of(&next, "token") > token);
}
