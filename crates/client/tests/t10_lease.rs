//! Leases against a real server: renewals keep a short lease valid, an
//! external revoke is noticed within one keep-alive interval, and a server
//! that becomes unreachable ends ownership exactly at the local deadline —
//! not before, and not after.

use leasehold_client::LossCause;
use leasehold_testkit::{client, eventually, within, Proxy, TestServer};
use std::time::Duration;
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(1);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewals_keep_a_one_second_lease_valid_across_three_ttls() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let lease = client.lease(TTL).owner("t10").grant().await.unwrap();
    let guard = lease
        .lock("t10/renewed")
        .fenced(true)
        .acquire()
        .await
        .unwrap();
    let token = guard.token();
    let held = Some((lease.id().0, token.0));
    assert_eq!(server.holder("t10/renewed").await, held);

    tracing::info!("phase: hold for more than three ttls, checking all along");
    let until = Instant::now() + TTL * 3 + Duration::from_millis(300);
    let mut checks = 0;
    while Instant::now() < until {
        let left = lease.check().expect("renewals keep the lease valid");
        assert!(left <= TTL, "more time left ({left:?}) than the ttl");
        assert_eq!(guard.fence(), Ok(token));
        checks += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(checks >= 60, "only {checks} checks ran");

    tracing::info!("phase: the server agrees, same holder and token");
    assert_eq!(server.holder("t10/renewed").await, held);
    let info = server.lock_info("t10/renewed").await.unwrap();
    let holder = info.holder.unwrap();
    assert!(
        holder.lease_remaining_ms > 0 && holder.lease_remaining_ms <= 1_000,
        "server-side remaining {} ms",
        holder.lease_remaining_ms
    );
    assert!(!guard.cancellation().is_cancelled());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_external_revoke_is_noticed_within_one_keep_alive_interval() {
    let server = TestServer::start().await;
    let client = server.client().await;
    // Frequent keep-alives, but a ttl with room to spare, so only the
    // revoke (not a slow machine) can end the lease.
    let interval = Duration::from_millis(300);
    let lease = client
        .lease(Duration::from_secs(3))
        .keep_alive_interval(interval)
        .grant()
        .await
        .unwrap();
    let guard = lease.lock("t10/revoked").acquire().await.unwrap();
    let cancellation = guard.cancellation();
    assert!(!cancellation.is_cancelled());
    assert!(guard.fence().is_ok());

    tracing::info!("phase: an operator revokes the lease");
    server.revoke(lease.id().0).await;
    let revoked_at = Instant::now();
    let bound = interval + Duration::from_millis(300);
    let lost = within("loss after the revoke", bound, guard.lost()).await;
    let noticed_after = revoked_at.elapsed();

    assert_eq!(lost.cause, LossCause::LeaseNotFound, "{lost}");
    assert_eq!(lost.lease, lease.id());
    assert_eq!(lost.lock.as_ref().map(|n| n.as_str()), Some("t10/revoked"));
    assert!(cancellation.is_cancelled());
    let fenced = guard.fence().unwrap_err();
    assert_eq!(fenced.cause, LossCause::LeaseNotFound);
    assert_eq!(lease.check().unwrap_err().cause, LossCause::LeaseNotFound);
    tracing::info!(?noticed_after, "loss noticed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_ends_ownership_at_the_local_deadline_not_before() {
    let server = TestServer::start().await;
    let proxy = Proxy::start(server.addr).await;
    let client = client(&[proxy.endpoint()]).await;
    // A margin larger than the default, so that stopping `margin` before
    // the server's expiry is visible from outside.
    let margin = Duration::from_millis(300);
    let lease = client.lease(TTL).margin(margin).grant().await.unwrap();
    let guard = lease.lock("t10/partitioned").acquire().await.unwrap();
    let token = guard.token();
    let watcher = guard.handle();
    let lost = tokio::spawn(async move {
        let lost = watcher.lost().await;
        (Instant::now(), lost)
    });
    // Another client, straight to the server, queues for the lock: it gets
    // it when the server expires the first lease.
    let other = server.client().await;
    let other = other.lease(Duration::from_secs(5)).grant().await.unwrap();
    let queued = tokio::spawn(async move {
        let taken = other.lock("t10/partitioned").wait(Duration::from_secs(3));
        let taken = taken.acquire().await;
        (Instant::now(), taken)
    });
    eventually(
        "the other client is queued",
        Duration::from_secs(1),
        || async {
            let info = server.lock_info("t10/partitioned").await;
            info.is_some_and(|info| info.waiters.len() == 1)
        },
    )
    .await;

    tracing::info!("phase: the server goes away");
    proxy.cut();
    let cut_at = Instant::now();
    // The deadline can only be later than this estimate: `check` reads
    // the clock after `cut_at`, and no acknowledgement crosses the cut.
    let left_at_cut = lease.check().expect("valid at the cut");
    let deadline_estimate = cut_at + left_at_cut;

    tracing::info!("phase: until the deadline, ownership still holds");
    let mut checks = 0;
    while Instant::now() + Duration::from_millis(30) < deadline_estimate {
        assert_eq!(guard.fence(), Ok(token), "lost before the local deadline");
        assert!(!lost.is_finished(), "lost() resolved before the deadline");
        checks += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(checks > 0, "the deadline was already near at the cut");

    tracing::info!("phase: at the deadline, it is lost");
    let slack = Duration::from_millis(300);
    let bound = (cut_at + TTL + slack).saturating_duration_since(Instant::now());
    let (lost_at, lost) = within("loss at the local deadline", bound, lost)
        .await
        .expect("watcher task");
    assert!(
        lost_at + Duration::from_millis(10) >= deadline_estimate,
        "lost {:?} before the estimated deadline",
        deadline_estimate - lost_at
    );
    assert!(lost_at - cut_at <= TTL + slack, "{:?}", lost_at - cut_at);
    let LossCause::DeadlineReached { since_last_ack } = lost.cause else {
        panic!("expected DeadlineReached, got {lost}");
    };
    assert!(since_last_ack >= TTL - margin, "{since_last_ack:?}");
    assert!(since_last_ack < TTL + slack, "{since_last_ack:?}");
    assert!(matches!(
        guard.fence().unwrap_err().cause,
        LossCause::DeadlineReached { .. }
    ));
    assert!(guard.cancellation().is_cancelled());
    assert!(proxy.refused() > 0, "the keeper never tried to reconnect");

    tracing::info!("phase: the server hands the lock on only after that, by about the margin");
    let (taken_at, taken) = within("the hand-over", Duration::from_secs(3), queued)
        .await
        .expect("queued task");
    let taken = taken.expect("the other client gets the lock at the expiry");
    assert!(taken.token() > token);
    assert!(
        taken_at >= lost_at + margin / 2,
        "the server handed the lock on {:?} after the loss; the margin is {margin:?}",
        taken_at.saturating_duration_since(lost_at)
    );
}
