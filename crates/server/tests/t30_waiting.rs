//! Queued acquires: a waiter whose deadline passes leaves the queue with
//! WaitTimeout; a waiter whose caller goes away leaves the queue too, so the
//! next waiter is granted instead of a ghost.

use leasehold_testkit::grpc::{acquire, acquire_now, grant, reason, release};
use leasehold_testkit::{eventually, TestServer};
use std::time::Duration;

/// Waits (bounded) until the queue of `name` holds exactly `expected`.
async fn await_waiters(server: &TestServer, name: &str, expected: &[u64]) {
    let what = format!("the waiters of {name} are {expected:?}");
    eventually(&what, Duration::from_secs(5), || async {
        let waiters = server.lock(name).await.waiters;
        waiters.iter().map(|w| w.lease).collect::<Vec<_>>() == expected
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_that_times_out_leaves_the_queue() {
    let (server, mut leases, mut locks) = TestServer::start_with_clients().await;
    let holder = grant(&mut leases, 30_000).await;
    let waiter = grant(&mut leases, 30_000).await;
    locks.acquire(acquire(holder, "w", 0)).await.unwrap();
    let timed_out = locks
        .acquire(acquire(waiter, "w", 300))
        .await
        .expect_err("times out");
    assert_eq!(reason(&timed_out), "WaitTimeout");
    await_waiters(&server, "w", &[]).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_that_disconnects_leaves_the_queue() {
    let (server, mut leases, mut locks) = TestServer::start_with_clients().await;
    let holder = grant(&mut leases, 30_000).await;
    let ghost = grant(&mut leases, 30_000).await;
    let next = grant(&mut leases, 30_000).await;
    let token = acquire_now(&mut locks, holder, "d").await;

    // The ghost waits on its own connection, which is then dropped.
    let mut ghost_locks = server.locks().await;
    let ghost_call =
        tokio::spawn(async move { ghost_locks.acquire(acquire(ghost, "d", 20_000)).await });
    await_waiters(&server, "d", &[ghost]).await;
    ghost_call.abort();
    await_waiters(&server, "d", &[]).await;

    let mut next_locks = server.locks().await;
    let next_call =
        tokio::spawn(async move { next_locks.acquire(acquire(next, "d", 20_000)).await });
    await_waiters(&server, "d", &[next]).await;
    locks.release(release(holder, "d", token)).await.unwrap();
    let granted = next_call
        .await
        .unwrap()
        .expect("next waiter granted")
        .into_inner();
    assert!(granted.token > token);
    server.stop().await;
}
