//! The leader's timers end what the holder did not: a max-hold ends a hold,
//! a lock delay keeps an expired holder's lock unavailable for its delay,
//! and both are measured against their bounds.

use leasehold_proto::v1::AcquireRequest;
use leasehold_testkit::grpc::{acquire, grant, reason};
use leasehold_testkit::{eventually, TestServer};
use std::ops::RangeInclusive;
use std::time::Duration;
use tokio::time::Instant;

/// Asserts `elapsed` lies within `bounds_ms`: the event `what` came
/// neither early nor late.
fn assert_within(elapsed: Duration, bounds_ms: RangeInclusive<u64>, what: &str) {
    assert!(
        elapsed >= Duration::from_millis(*bounds_ms.start()),
        "{what} early: {elapsed:?}"
    );
    assert!(
        elapsed <= Duration::from_millis(*bounds_ms.end()),
        "{what} late: {elapsed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_hold_releases_the_lock_and_grants_the_next_waiter() {
    let (server, mut leases, mut locks) = TestServer::start_with_clients().await;
    let holder = grant(&mut leases, 30_000).await;
    let waiter = grant(&mut leases, 30_000).await;
    let started = Instant::now();
    let held = locks
        .acquire(AcquireRequest {
            max_hold_ms: 1_000,
            ..acquire(holder, "mh", 0)
        })
        .await
        .unwrap()
        .into_inner();
    let granted = locks
        .acquire(acquire(waiter, "mh", 10_000))
        .await
        .unwrap()
        .into_inner();
    let elapsed = started.elapsed();
    eprintln!("max-hold 1000 ms ended the hold after {elapsed:?}");
    assert!(granted.token > held.token);
    assert_within(elapsed, 1_000..=1_800, "ended");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_delay_holds_an_expired_holders_lock_for_its_delay() {
    let (server, mut leases, mut locks) = TestServer::start_with_clients().await;
    // The holder's ttl runs from its grant, so the stopwatch starts before
    // it: the delay's lower bound then holds however slow the calls are.
    let started = Instant::now();
    let holder = grant(&mut leases, 1_000).await;
    let waiter = grant(&mut leases, 30_000).await;
    locks
        .acquire(AcquireRequest {
            lock_delay_ms: 1_000,
            ..acquire(holder, "ld", 0)
        })
        .await
        .unwrap();
    let mut waiting = server.locks().await;
    let wait = tokio::spawn(async move { waiting.acquire(acquire(waiter, "ld", 10_000)).await });

    // Once the holder has expired, the lock reports its delay and stays busy.
    eventually("the holder has expired", Duration::from_secs(5), || async {
        let lock = server.lock("ld").await;
        let expired = lock.holder.is_none();
        if expired {
            assert!(lock.lock_delay_remaining_ms > 0 && lock.lock_delay_remaining_ms <= 1_000);
        }
        expired
    })
    .await;
    let third = grant(&mut leases, 30_000).await;
    let busy = locks
        .acquire(acquire(third, "ld", 0))
        .await
        .expect_err("busy during the delay");
    assert_eq!(reason(&busy), "Busy");

    wait.await
        .unwrap()
        .expect("the waiter is granted after the delay");
    let elapsed = started.elapsed();
    eprintln!("ttl 1000 ms + lock delay 1000 ms: waiter granted after {elapsed:?}");
    assert_within(elapsed, 2_000..=3_000, "granted");
    server.stop().await;
}
