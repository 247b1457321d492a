//! Releasing: each [`ReleaseOutcome`] produced for real (released, the
//! lease already gone, the lock moved on to another holder, the lock gone
//! altogether), and the releases nobody asks for — dropping a guard, and
//! dropping a lease with its guards.

use leasehold_client::{LossCause, ReleaseOutcome};
use leasehold_testkit::{eventually, within, TestServer};
use std::time::Duration;
use tokio::time::Instant;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_lock_is_released() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let lease = client.lease(Duration::from_secs(10)).grant().await.unwrap();
    let guard = lease.lock("t20/released").acquire().await.unwrap();
    let handle = guard.handle();

    let outcome = guard.release().await.unwrap();
    assert_eq!(outcome, ReleaseOutcome::Released);
    assert!(outcome.was_held());
    assert_eq!(server.lock_info("t20/released").await, None);
    // A copy of the handle learns that the lock is no longer ours.
    assert_eq!(handle.fence().unwrap_err().cause, LossCause::Released);
    assert!(lease.check().is_ok(), "releasing a lock ended the lease");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn releasing_after_the_lease_was_revoked_reports_already_expired() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let lease = client.lease(Duration::from_secs(10)).grant().await.unwrap();
    let guard = lease.lock("t20/expired").acquire().await.unwrap();

    server.revoke(lease.id().0).await;
    let outcome = guard.release().await.unwrap();
    assert_eq!(outcome, ReleaseOutcome::AlreadyExpired);
    assert!(!outcome.was_held());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn releasing_after_max_hold_gave_the_lock_to_another_reports_its_holder() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let ttl = Duration::from_secs(3);
    let first = client.lease(ttl).owner("first").grant().await.unwrap();
    let second = client.lease(ttl).owner("second").grant().await.unwrap();
    let acquired_at = Instant::now();
    let max_hold = Duration::from_secs(1);
    let guard = first
        .lock("t20/moved")
        .max_hold(max_hold)
        .acquire()
        .await
        .unwrap();

    tracing::info!("phase: the second lease queues; the server ends the first hold");
    let lost = async {
        let lost = guard.lost().await;
        (Instant::now(), lost)
    };
    let queued = async {
        let acquired = second
            .lock("t20/moved")
            .wait(Duration::from_secs(3))
            .acquire();
        (acquired.await, Instant::now())
    };
    let bound = Duration::from_secs(4);
    let ((lost_at, lost), (taken, taken_at)) = within("hand-over at max hold", bound, async {
        tokio::join!(lost, queued)
    })
    .await;
    let taken = taken.expect("the second lease gets the lock at the first's max hold");

    assert_eq!(lost.cause, LossCause::MaxHoldReached, "{lost}");
    assert_eq!(guard.fence().unwrap_err().cause, LossCause::MaxHoldReached);
    assert!(guard.cancellation().is_cancelled());
    assert!(
        lost_at <= taken_at,
        "the first holder learned of the loss after the second got the lock"
    );
    assert!(
        taken_at - acquired_at >= max_hold - Duration::from_millis(100),
        "handed over after only {:?}",
        taken_at - acquired_at
    );
    let t = taken.token();
    assert!(t > guard.token());
    assert_eq!(server.holder("t20/moved").await, Some((second.id().0, t.0)));
    assert!(first.check().is_ok(), "max hold ended the whole lease");

    tracing::info!("phase: the stale release is told who holds it, and changes nothing");
    let outcome = guard.release().await.unwrap();
    assert_eq!(
        outcome,
        ReleaseOutcome::HeldByAnother {
            holder_token: Some(t)
        }
    );
    assert_eq!(server.holder("t20/moved").await, Some((second.id().0, t.0)));
    assert_eq!(taken.fence(), Ok(t));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn releasing_a_lock_that_max_hold_freed_reports_no_such_lock() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let lease = client.lease(Duration::from_secs(3)).grant().await.unwrap();
    let guard = lease
        .lock("t20/gone")
        .max_hold(Duration::from_secs(1))
        .acquire()
        .await
        .unwrap();

    let lost = within("loss at max hold", Duration::from_secs(2), guard.lost()).await;
    assert_eq!(lost.cause, LossCause::MaxHoldReached, "{lost}");
    assert!(guard.fence().is_err());
    eventually(
        "the server frees the lock",
        Duration::from_secs(2),
        || async { server.lock_info("t20/gone").await.is_none() },
    )
    .await;

    let outcome = guard.release().await.unwrap();
    assert!(
        matches!(outcome, ReleaseOutcome::NoSuchLock { .. }),
        "{outcome:?}"
    );
    assert!(lease.check().is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_guard_releases_the_lock_in_the_background() {
    let server = TestServer::start().await;
    let client = server.client().await;
    // Long leases: only a release, not an expiry, can free the lock in time.
    let ttl = Duration::from_secs(30);
    let first = client.lease(ttl).grant().await.unwrap();
    let second = client.lease(ttl).grant().await.unwrap();
    let guard = first.lock("t20/dropped").acquire().await.unwrap();
    let dropped_token = guard.token();

    drop(guard);
    let started = Instant::now();
    let taken = second
        .lock("t20/dropped")
        .wait(Duration::from_secs(5))
        .acquire()
        .await
        .unwrap();
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(1),
        "freed only after {waited:?}"
    );
    assert!(taken.token() > dropped_token);
    let held = Some((second.id().0, taken.token().0));
    assert_eq!(server.holder("t20/dropped").await, held);

    tracing::info!("phase: dropping a guard leaves its lease alone");
    assert!(first.check().is_ok());
    assert!(server.lease_exists(first.id().0).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_keeps_its_lease_renewed_after_the_lease_handle_is_dropped() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let ttl = Duration::from_secs(1);
    let lease = client.lease(ttl).grant().await.unwrap();
    let id = lease.id().0;
    let guard = lease.lock("t20/orphaned-handle").acquire().await.unwrap();
    drop(lease);

    let until = Instant::now() + ttl * 2 + Duration::from_millis(500);
    while Instant::now() < until {
        assert_eq!(guard.fence(), Ok(guard.token()));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(server.lease_exists(id).await);
    let held = Some((id, guard.token().0));
    assert_eq!(server.holder("t20/orphaned-handle").await, held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_lease_and_its_guards_revokes_the_lease() {
    let server = TestServer::start().await;
    let client = server.client().await;
    // Long enough that only a revoke can end it within the test.
    let lease = client.lease(Duration::from_secs(30)).grant().await.unwrap();
    let id = lease.id().0;
    let guard = lease.lock("t20/all-dropped").acquire().await.unwrap();
    assert!(server.lease_exists(id).await);

    drop(guard);
    drop(lease);
    let took = eventually("the lease is revoked", Duration::from_secs(3), || async {
        !server.lease_exists(id).await
    })
    .await;
    assert_eq!(server.lock_info("t20/all-dropped").await, None);
    tracing::info!(?took, "revoked");
}
