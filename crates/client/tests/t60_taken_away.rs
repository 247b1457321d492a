//! A lock taken away is a lock lost, whatever took it (seed 001, "prove the
//! fix" 5: the owner must observe the loss and abort within one refresh
//! interval). An operator's force release without `revoke_lease` leaves the
//! holder's lease alive, so renewal goes on succeeding; the keep-alive
//! reply no longer lists the lock, and the guard's loss fires within one
//! renewal interval, naming who freed it and why. The lost guard stops
//! keeping the lease renewed.

use leasehold_client::LossCause;
use leasehold_proto::v1::ForceReleaseRequest;
use leasehold_testkit::{eventually, within, TestServer};
use std::time::Duration;
use tokio::time::Instant;

/// Force-releases `name` from the holder with `token`, as an operator would.
async fn force_release(server: &TestServer, name: &str, token: u64) {
    let request = ForceReleaseRequest {
        name: name.into(),
        expected_token: token,
        reason: "INC-7 drill".into(),
        allow_unfenced: false,
        revoke_lease: false,
        caller: "ops@bastion".into(),
    };
    server
        .locks()
        .await
        .force_release(request)
        .await
        .expect("force release accepted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_force_released_guard_hears_of_it_within_one_interval() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let interval = Duration::from_secs(1);
    let lease = client
        .lease(Duration::from_secs(3))
        .keep_alive_interval(interval)
        .grant()
        .await
        .unwrap();
    let guard = lease
        .lock("t60/forced")
        .fenced(true)
        .acquire()
        .await
        .unwrap();
    let token = guard.token();
    let kept = lease.lock("t60/kept").acquire().await.unwrap();

    tracing::info!("phase: an operator force-releases one lock; the lease lives on");
    let freed_at = Instant::now();
    force_release(&server, "t60/forced", token.0).await;
    let lost = within(
        "the guard's loss",
        interval + Duration::from_millis(500),
        guard.lost(),
    )
    .await;
    let took = freed_at.elapsed();
    eprintln!("loss observed {took:?} after the force release (interval {interval:?})");
    let LossCause::ReleasedByServer { how } = &lost.cause else {
        panic!("unexpected cause {lost:?}");
    };
    assert!(how.contains("force-released"), "{how}");
    assert!(
        how.contains("ops@bastion") && how.contains("INC-7 drill"),
        "{how}"
    );
    assert!(lost.to_string().contains("t60/forced"), "{lost}");
    assert!(guard.fence().is_err(), "fence() still hands out the token");
    assert!(guard.cancellation().is_cancelled());

    tracing::info!("phase: the lease and its other lock are unaffected");
    assert!(lease.check().is_ok(), "the whole lease was declared lost");
    assert_eq!(kept.fence().unwrap(), kept.token());
    assert!(server.lease_exists(lease.id().0).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_guard_does_not_keep_an_idle_lease_renewed() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let ttl = Duration::from_secs(3);
    let lease = client
        .lease(ttl)
        .keep_alive_interval(Duration::from_secs(1))
        .grant()
        .await
        .unwrap();
    let lease_id = lease.id().0;
    let guard = lease.lock("t60/idle").fenced(true).acquire().await.unwrap();
    // Only the guard keeps the lease renewed now.
    drop(lease);
    let token = guard.token();

    tracing::info!("phase: the lock is taken away; the guard is kept around");
    force_release(&server, "t60/idle", token.0).await;
    within("the loss", Duration::from_secs(2), guard.lost()).await;
    // The keeper stops and ends the lease, rather than renew it for good
    // while it holds nothing (well before the ttl would expire it).
    let gone = eventually("the lease to end", ttl, || async {
        !server.lease_exists(lease_id).await
    })
    .await;
    eprintln!("lease ended {gone:?} after the loss was seen");
    assert!(guard.fence().is_err());
    // Dropping the lost guard sends no release (the server already freed it).
    drop(guard);
}
