//! Queued acquires: a waiter whose deadline passes leaves the queue with
//! WaitTimeout; a waiter whose caller goes away leaves the queue too, so the
//! next waiter is granted instead of a ghost. The deadline is the lessor's:
//! the leader's timer ends the wait, not the caller's own backstop.

use leasehold_proto::v1::lock_client::LockClient;
use leasehold_proto::v1::AcquireRequest;
use leasehold_testkit::grpc::{acquire, acquire_now, grant, reason, release};
use leasehold_testkit::{eventually, TestServer};
use std::time::{Duration, Instant};
use tonic::transport::Channel;

/// How long past its deadline a wait waits for the leader's timeout (`TimeOutWaits`)
/// before proposing one itself (`api::wait::wake_grace` with the default
/// timings): a wait that ends sooner than this after its deadline was
/// ended by the leader's timer.
const WAKE_GRACE: Duration = Duration::from_secs(3);
/// Scheduling slack on a loaded machine, well below `WAKE_GRACE`.
const SLACK: Duration = Duration::from_secs(1);

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

/// A server where one lease holds `name` and another lease is ready to
/// queue for it: the server, a lock client, and the second lease.
async fn held(name: &str) -> (TestServer, LockClient<Channel>, u64) {
    let (server, mut leases, mut locks) = TestServer::start_with_clients().await;
    let holder = grant(&mut leases, 30_000).await;
    let waiter = grant(&mut leases, 30_000).await;
    acquire_now(&mut locks, holder, name).await;
    (server, locks, waiter)
}

/// Sends `request`, which must end with WaitTimeout; returns how long that took.
async fn time_out(locks: &mut LockClient<Channel>, request: AcquireRequest) -> Duration {
    let started = Instant::now();
    let timed_out = locks.acquire(request).await.expect_err("times out");
    let took = started.elapsed();
    assert_eq!(reason(&timed_out), "WaitTimeout", "after {took:?}");
    took
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leaders_timer_ends_a_wait_at_its_deadline() {
    let (server, mut locks, waiter) = held("deadline").await;
    let wait = Duration::from_millis(300);
    let took = time_out(&mut locks, acquire(waiter, "deadline", 300)).await;
    assert!(took >= wait, "ended early, after {took:?}");
    assert!(
        took < wait + SLACK && SLACK < WAKE_GRACE,
        "ended after {took:?}: by the caller's backstop, not the lessor"
    );
    await_waiters(&server, "deadline", &[]).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_of_a_wait_that_ended_times_out_at_its_own_deadline() {
    let (server, mut locks, waiter) = held("retried").await;
    let mut request = acquire(waiter, "retried", 300);
    request.request_id = "retried-wait-1".into();
    time_out(&mut locks, request.clone()).await;
    // The retry replays the first outcome (queued), but the lease is in no
    // queue: nothing will wake it, so it ends at its own deadline.
    let took = time_out(&mut locks, request).await;
    let wait = Duration::from_millis(300);
    assert!(took >= wait, "ended after {took:?}");
    assert!(took < wait + SLACK, "took {took:?}");
    server.stop().await;
}
