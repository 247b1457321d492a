//! `Client::with_lock`: work that finishes (value returned, lock released,
//! lease revoked), work whose lease is revoked underneath it (dropped at
//! that moment, before it could finish), and work past its deadline.

use leasehold_client::{LockOptions, LossCause, ReleaseOutcome, WorkOutcome};
use leasehold_testkit::{eventually_some, within, TestServer};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How long the interrupted work would run if nobody stopped it.
const LONG_WORK: Duration = Duration::from_secs(5);

/// Records that the work future was dropped, finished or not.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Work that would set `finished` after [`LONG_WORK`], and sets `dropped`
/// when its future is dropped.
async fn long_work(finished: Arc<AtomicBool>, dropped: Arc<AtomicBool>) {
    let _flag = DropFlag(dropped);
    tokio::time::sleep(LONG_WORK).await;
    finished.store(true, Ordering::SeqCst);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_work_returns_its_value_then_releases_and_revokes() {
    let server = TestServer::start().await;
    let client = server.client().await;
    // A long ttl, so the lease is gone afterwards only if it was revoked.
    let options = LockOptions::default().ttl(Duration::from_secs(30));
    let server_ref = &server;
    let outcome = client
        .with_lock("t40/finished", options, |handle| async move {
            let token = handle.fence().expect("held while the work runs");
            let holder = server_ref.holder("t40/finished").await;
            (token, handle.lease_id(), holder)
        })
        .await
        .unwrap();

    let WorkOutcome::Finished { value, release } = outcome else {
        panic!("expected Finished, got {outcome:?}");
    };
    let (token, lease, holder_seen) = value;
    assert_eq!(holder_seen, Some((lease.0, token.0)));
    assert_eq!(release, Ok(ReleaseOutcome::Released));
    assert_eq!(server.lock_info("t40/finished").await, None);
    assert!(
        !server.lease_exists(lease.0).await,
        "the lease outlived with_lock"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_is_dropped_the_moment_its_lease_is_revoked() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let options = LockOptions::default().ttl(Duration::from_secs(2));
    let finished = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicBool::new(false));
    let work = {
        let (finished, dropped) = (finished.clone(), dropped.clone());
        move |_handle| long_work(finished, dropped)
    };
    let started = Instant::now();
    let run = client.with_lock("t40/revoked", options, work);
    let revoke = async {
        let (lease, _) = eventually_some("the work holds the lock", Duration::from_secs(2), || {
            server.holder("t40/revoked")
        })
        .await;
        server.revoke(lease).await;
        lease
    };
    let (outcome, revoked) = within("with_lock ends", Duration::from_secs(3), async {
        tokio::join!(run, revoke)
    })
    .await;
    let elapsed = started.elapsed();

    let WorkOutcome::Lost(lost) = outcome.unwrap() else {
        panic!("expected Lost");
    };
    assert_eq!(lost.cause, LossCause::LeaseNotFound, "{lost}");
    assert_eq!(lost.lease.0, revoked);
    assert!(
        dropped.load(Ordering::SeqCst),
        "the work future was not dropped"
    );
    assert!(!finished.load(Ordering::SeqCst), "the work ran to its end");
    assert!(elapsed < LONG_WORK, "took {elapsed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_past_its_deadline_is_dropped_and_the_lock_released() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let deadline = Duration::from_millis(200);
    let options = LockOptions::default().deadline(deadline);
    let finished = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicBool::new(false));
    let work = {
        let (finished, dropped) = (finished.clone(), dropped.clone());
        move |_handle| long_work(finished, dropped)
    };
    let started = Instant::now();
    let outcome = client
        .with_lock("t40/deadline", options, work)
        .await
        .unwrap();
    let elapsed = started.elapsed();

    let WorkOutcome::DeadlineExceeded { release } = outcome else {
        panic!("expected DeadlineExceeded, got {outcome:?}");
    };
    assert_eq!(release, Ok(ReleaseOutcome::Released));
    assert!(elapsed >= deadline, "ended after only {elapsed:?}");
    assert!(
        elapsed < deadline + Duration::from_secs(1),
        "took {elapsed:?}"
    );
    assert!(
        dropped.load(Ordering::SeqCst),
        "the work future was not dropped"
    );
    assert!(!finished.load(Ordering::SeqCst));
    assert_eq!(server.lock_info("t40/deadline").await, None);
}
