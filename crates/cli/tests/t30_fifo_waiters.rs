//! Fair waiting (docs/DESIGN.md §2.9): waiters queue in FIFO order and are
//! granted one at a time, in that order, with strictly increasing tokens.

mod common;

use common::{finish, wait_for, Server};
use std::time::Duration;

const LOCK: &str = "queue/fifo";

#[test]
fn t30_fifo_waiters() {
    let server = Server::start();
    let holder = server.ok_json(&["acquire", LOCK, "--ttl", "30s", "--json"]);

    eprintln!("phase: three waiters queue one after the other");
    let mut waiters = Vec::new();
    for n in 1..=3u64 {
        let child = server.spawn(&["acquire", LOCK, "--ttl", "30s", "--wait", "20s", "--json"]);
        waiters.push(child);
        wait_for(
            &format!("waiter {n} to be queued"),
            Duration::from_secs(10),
            || {
                let lock = server.cli(&["get", LOCK, "--json"]);
                (lock.code == 0 && lock.json()["waiters"].as_u64() == Some(n)).then_some(())
            },
        );
    }
    let queued = server.ok_json(&["get", LOCK, "--json"]);
    let queue: Vec<u64> = queued["waiter_leases"]
        .as_array()
        .expect("waiter_leases")
        .iter()
        .map(|l| l.as_u64().expect("lease id"))
        .collect();
    assert_eq!(queue.len(), 3, "{queued}");

    eprintln!("phase: release in turn; each waiter is granted in order");
    let mut previous = holder;
    for (n, child) in waiters.into_iter().enumerate() {
        server
            .cli(&[
                "release",
                LOCK,
                "--lease",
                &previous["lease"].to_string(),
                "--token",
                &previous["token"].to_string(),
            ])
            .expect_code(0);
        let granted = finish(
            child,
            &format!("waiter {} to be granted", n + 1),
            Duration::from_secs(10),
        );
        granted.expect_code(0);
        let granted = granted.json();
        assert_eq!(
            granted["lease"].as_u64(),
            Some(queue[n]),
            "granted out of queue order"
        );
        let (before, now) = (previous["token"].as_u64(), granted["token"].as_u64());
        assert!(
            now > before,
            "tokens not strictly increasing: {before:?} then {now:?}"
        );
        let lock = server.ok_json(&["get", LOCK, "--json"]);
        assert_eq!(lock["token"], granted["token"]);
        assert_eq!(lock["waiters"].as_u64(), Some(2 - n as u64));
        previous = granted;
    }
}
