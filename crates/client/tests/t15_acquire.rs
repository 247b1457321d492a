//! Acquire's refusals: one guard per lock per lease (`AlreadyHeld`), a lock
//! held by another lease (`Busy`, naming the lock and the holder's token),
//! and a wait that runs out (`WaitTimeout`).

use leasehold_client::Error;
use leasehold_testkit::TestServer;
use std::time::Duration;
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_guard_of_the_same_lease_is_refused_as_already_held() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let lease = client.lease(TTL).grant().await.unwrap();
    let guard = lease.lock("t15/x").acquire().await.unwrap();

    let error = lease.lock("t15/x").acquire().await.unwrap_err();
    assert!(
        matches!(&error, Error::AlreadyHeld { name } if name == "t15/x"),
        "{error:?}"
    );

    tracing::info!("phase: the refusal left the first guard's lock alone");
    assert_eq!(guard.fence(), Ok(guard.token()));
    let held = Some((lease.id().0, guard.token().0));
    assert_eq!(server.holder("t15/x").await, held);

    tracing::info!("phase: once released, the lease may take it again");
    let first = guard.token();
    assert!(guard.release().await.unwrap().was_held());
    let again = lease.lock("t15/x").acquire().await.unwrap();
    assert!(again.token() > first);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_lease_is_told_busy_at_once_or_times_out_waiting() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let holder = client.lease(TTL).owner("holder").grant().await.unwrap();
    let guard = holder.lock("t15/busy").acquire().await.unwrap();
    let other = client.lease(TTL).owner("other").grant().await.unwrap();

    tracing::info!("phase: without a wait, busy at once");
    let error = other.lock("t15/busy").acquire().await.unwrap_err();
    match &error {
        Error::Busy { name, holder_token } => {
            assert_eq!(name, "t15/busy");
            assert_eq!(*holder_token, Some(guard.token()));
        }
        other => panic!("expected Busy, got {other:?}"),
    }
    assert!(error.to_string().contains("t15/busy"), "{error}");

    tracing::info!("phase: with a 300 ms wait, a timeout after about 300 ms");
    let wait = Duration::from_millis(300);
    let started = Instant::now();
    let error = other
        .lock("t15/busy")
        .wait(wait)
        .acquire()
        .await
        .unwrap_err();
    let elapsed = started.elapsed();
    match &error {
        Error::WaitTimeout { name, waited } => {
            assert_eq!(name, "t15/busy");
            assert!(*waited >= wait, "waited only {waited:?}");
        }
        other => panic!("expected WaitTimeout, got {other:?}"),
    }
    assert!(elapsed >= wait, "gave up after {elapsed:?}");
    assert!(elapsed < wait + Duration::from_secs(1), "took {elapsed:?}");

    tracing::info!("phase: neither refusal disturbed the holder");
    let held = Some((holder.id().0, guard.token().0));
    assert_eq!(server.holder("t15/busy").await, held);
    assert!(guard.fence().is_ok());

    tracing::info!("phase: and the other lease's failed attempts left nothing behind");
    let holder_token = guard.token();
    assert!(guard.release().await.unwrap().was_held());
    let taken = other.lock("t15/busy").acquire().await.unwrap();
    assert!(taken.token() > holder_token);
}
