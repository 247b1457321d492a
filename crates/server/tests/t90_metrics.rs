//! `/metrics` over real HTTP: the text is valid Prometheus exposition, and
//! each kind of activity moves its counters and histograms by exactly the
//! expected amounts. One test per process: the recorder is process-global.

#[path = "support/prometheus.rs"]
mod prometheus;

use leasehold_testkit::grpc::{acquire, acquire_now, grant, keep_alive, release};
use leasehold_testkit::{eventually, TestServer};
use prometheus::Scrape;
use std::time::Duration;

/// The change of each watched series between two scrapes.
fn delta(before: &Scrape, after: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    after.value(name, labels) - before.value(name, labels)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activity_moves_the_counters_and_histograms() {
    let server = TestServer::start().await;
    let endpoint = server.endpoint.clone();
    tracing::info!("phase: the start-up probe's 1 s leases expire; then a baseline");
    eventually(
        "the start-up leases are gone",
        Duration::from_secs(10),
        || {
            let endpoint = endpoint.clone();
            async move {
                Scrape::fetch(&endpoint)
                    .await
                    .value("leasehold_leases", &[])
                    == 0.0
            }
        },
    )
    .await;
    let before = Scrape::fetch(&endpoint).await;
    for family in [
        "leasehold_acquires_total",
        "leasehold_force_releases_total",
        "leasehold_raft_term",
        "leasehold_raft_commit_index",
        "leasehold_raft_applied_index",
    ] {
        assert!(before.types.contains_key(family), "{family} not exported");
    }
    assert_eq!(before.value("leasehold_raft_is_leader", &[]), 1.0);
    assert!(before.value("leasehold_raft_term", &[]) >= 1.0);
    let applied = before.value("leasehold_raft_applied_index", &[]);
    assert!(applied >= 1.0);
    assert!(before.value("leasehold_raft_commit_index", &[]) >= applied);

    tracing::info!("phase: grant, acquire, keep-alive, a wrong-token release");
    let mut leases = server.leases().await;
    let mut locks = server.locks().await;
    let holder = grant(&mut leases, 10_000).await;
    let token = acquire_now(&mut locks, holder, "m").await;
    keep_alive(&mut leases, holder, 1).await;
    let refused = locks.release(release(holder, "m", token + 100)).await;
    assert!(refused.is_err(), "a wrong token must not release");

    tracing::info!("phase: a queued acquire granted on release");
    let waiter = grant(&mut leases, 10_000).await;
    let mut waiting_locks = server.locks().await;
    let queued =
        tokio::spawn(async move { waiting_locks.acquire(acquire(waiter, "m", 10_000)).await });
    eventually("the acquire is queued", Duration::from_secs(5), || {
        let endpoint = endpoint.clone();
        async move {
            let scrape = Scrape::fetch(&endpoint).await;
            scrape.value("leasehold_waiting_acquires", &[]) == 1.0
        }
    })
    .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    locks
        .release(release(holder, "m", token))
        .await
        .expect("release");
    let granted = queued.await.unwrap().expect("queued acquire granted");
    assert!(granted.into_inner().token > token);

    tracing::info!("phase: a 1 s lease holding a lock expires");
    let doomed = grant(&mut leases, 1_000).await;
    acquire_now(&mut locks, doomed, "e").await;
    eventually("the 1 s lease expired", Duration::from_secs(10), || {
        let endpoint = endpoint.clone();
        let before = before.value("leasehold_leases_expired_total", &[]);
        async move {
            let scrape = Scrape::fetch(&endpoint).await;
            scrape.value("leasehold_leases_expired_total", &[]) > before
        }
    })
    .await;

    let after = Scrape::fetch(&endpoint).await;
    let released = [("cause", "released")];
    let expired = [("cause", "lease_expired")];
    let not_holder = [("reason", "not_holder")];
    for (name, labels, expected) in [
        ("leasehold_acquires_total", &[][..], 3.0),
        ("leasehold_locks_granted_total", &[][..], 3.0),
        ("leasehold_keepalives_total", &[][..], 1.0),
        ("leasehold_releases_total", &[][..], 1.0),
        ("leasehold_leases_expired_total", &[][..], 1.0),
        ("leasehold_locks_freed_total", &released[..], 1.0),
        ("leasehold_locks_freed_total", &expired[..], 1.0),
        ("leasehold_command_failures_total", &not_holder[..], 1.0),
        ("leasehold_release_failures_total", &not_holder[..], 1.0),
        ("leasehold_force_releases_total", &[][..], 0.0),
        ("leasehold_keepalive_margin_seconds_count", &[][..], 1.0),
        ("leasehold_keepalive_margin_ratio_count", &[][..], 1.0),
        ("leasehold_wait_seconds_count", &[][..], 1.0),
        // The released holder and the expired one; the waiter still holds.
        ("leasehold_hold_seconds_count", &[][..], 2.0),
    ] {
        let moved = delta(&before, &after, name, labels);
        assert_eq!(moved, expected, "{name}{labels:?} moved by {moved}");
    }
    // The waiter waited at least the 50 ms before the release.
    let waited = delta(&before, &after, "leasehold_wait_seconds_sum", &[]);
    assert!((0.05..10.0).contains(&waited), "waited {waited} s");
    // A keep-alive right after the grant leaves nearly the whole ttl.
    let ratio = delta(&before, &after, "leasehold_keepalive_margin_ratio_sum", &[]);
    assert!((0.5..=1.0).contains(&ratio), "margin ratio {ratio}");
    assert_eq!(after.types["leasehold_wait_seconds"], "histogram");
    assert_eq!(after.value("leasehold_locks", &[]), 1.0);
    assert_eq!(after.value("leasehold_leases", &[]), 2.0);
    assert_eq!(after.value("leasehold_waiting_acquires", &[]), 0.0);
    server.stop().await;
}
