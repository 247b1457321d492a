//! Server-side expiry: a holder that never renews loses its lock after its
//! ttl, and the head waiter is granted promptly, neither early nor late.

mod common;

use common::{finish, wait_for, Server};
use std::time::{Duration, Instant};

const LOCK: &str = "expiry/one";
const TTL_MS: u128 = 1_000;
/// How late the waiter may be granted after the ttl: timer resolution,
/// the group commit of the expiry, and two process start-ups.
const LATE_MS_MAX: u128 = 1_500;

#[test]
fn t40_lease_expiry() {
    let server = Server::start();

    let spawned = Instant::now();
    let holder = server.ok_json(&["acquire", LOCK, "--ttl", "1s", "--json"]);
    let acquired = Instant::now();
    let waiter = server.spawn(&["acquire", LOCK, "--ttl", "30s", "--wait", "10s", "--json"]);
    let run = finish(waiter, "the waiter to be granted", Duration::from_secs(15));
    let granted = Instant::now();
    run.expect_code(0);
    let waiter = run.json();

    // The lease was granted after `spawned`, so it cannot expire (and the
    // waiter cannot be granted) before spawned + ttl.
    let from_spawn_ms = (granted - spawned).as_millis();
    let from_ack_ms = (granted - acquired).as_millis();
    eprintln!(
        "measured: waiter granted {from_ack_ms} ms after the holder's acquire returned \
         ({from_spawn_ms} ms after it started); ttl {TTL_MS} ms"
    );
    assert!(
        from_spawn_ms >= TTL_MS,
        "the lock was free before the ttl: {from_spawn_ms} ms"
    );
    assert!(
        from_ack_ms <= TTL_MS + LATE_MS_MAX,
        "the expired lock was granted late: {from_ack_ms} ms"
    );
    assert!(
        waiter["token"].as_u64() > holder["token"].as_u64(),
        "{holder} then {waiter}"
    );

    eprintln!("phase: the expired lease is gone");
    let holder_lease = holder["lease"].to_string();
    let gone = wait_for(
        "the expired lease to be reported gone",
        Duration::from_secs(5),
        || {
            let run = server.cli(&["lease", "keepalive", &holder_lease, "--once"]);
            (run.code != 0).then_some(run)
        },
    );
    gone.expect_code(4);
}
