//! Queued acquires: a waiter whose deadline passes leaves the queue with
//! WaitTimeout; a waiter whose caller goes away leaves the queue too, so the
//! next waiter is granted instead of a ghost.

mod common;

use common::{acquire, grant, reason, TestServer};
use leasehold_proto::v1::{GetLockRequest, ReleaseRequest};
use std::time::Duration;

async fn waiters_of(server: &TestServer, name: &str) -> Vec<u64> {
    let mut locks = server.locks().await;
    let lock = locks
        .get(GetLockRequest { name: name.into() })
        .await
        .unwrap()
        .into_inner()
        .lock
        .unwrap();
    lock.waiters.iter().map(|w| w.lease).collect()
}

async fn await_waiters(server: &TestServer, name: &str, expected: &[u64]) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let waiters = waiters_of(server, name).await;
        if waiters == expected {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "waiters {waiters:?}, want {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_that_times_out_leaves_the_queue() {
    let server = TestServer::start().await;
    let mut leases = server.leases().await;
    let mut locks = server.locks().await;
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
    let server = TestServer::start().await;
    let mut leases = server.leases().await;
    let mut locks = server.locks().await;
    let holder = grant(&mut leases, 30_000).await;
    let ghost = grant(&mut leases, 30_000).await;
    let next = grant(&mut leases, 30_000).await;
    let token = locks
        .acquire(acquire(holder, "d", 0))
        .await
        .unwrap()
        .into_inner()
        .token;

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
    locks
        .release(ReleaseRequest {
            lease: holder,
            name: "d".into(),
            token,
            request_id: String::new(),
        })
        .await
        .unwrap();
    let granted = next_call
        .await
        .unwrap()
        .expect("next waiter granted")
        .into_inner();
    assert!(granted.token > token);
    server.stop().await;
}
