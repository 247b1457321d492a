//! The session stream under trouble, and the one-off renewal: a queued
//! acquire whose stream breaks mid-wait is retried (same request id) and
//! still gets the lock within its wait; `keep_alive_once` renews now and
//! reports a lease the server no longer knows as lost.

use leasehold_client::{Error, LossCause};
use leasehold_testkit::{client, eventually, within, Proxy, TestServer};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_acquire_whose_stream_breaks_gets_the_lock_within_its_wait() {
    let server = TestServer::start().await;
    let proxy = Proxy::start(server.addr).await;
    let direct = server.client().await;
    let through_proxy = client(&[proxy.endpoint()]).await;
    let ttl = Duration::from_secs(10);
    let holder = direct.lease(ttl).grant().await.unwrap();
    // Frequent renewals: the first one says the lease's stream is open.
    let interval = Duration::from_millis(100);
    let waiter = through_proxy.lease(ttl).keep_alive_interval(interval);
    let waiter = waiter.grant().await.unwrap();
    let held = holder.lock("t16/queued").acquire().await.unwrap();
    let mut renewals = waiter.renewals();
    let renewed = renewals.wait_for(|renewed| renewed.count >= 1);
    within("a renewal on the stream", Duration::from_secs(3), renewed)
        .await
        .unwrap();

    tracing::info!("phase: the waiter queues on its session stream");
    let name = "t16/queued";
    let queued = waiter.lock(name).wait(Duration::from_secs(8)).acquire();
    let queued = tokio::spawn(queued);
    let id = waiter.id().0;
    let waiting = || server.is_waiting(name, id);
    eventually("the waiter is queued", Duration::from_secs(3), waiting).await;

    tracing::info!("phase: the connection breaks mid-wait; the waiter leaves the queue");
    proxy.cut();
    eventually(
        "the client tries to reconnect",
        Duration::from_secs(3),
        || async { proxy.refused() > 0 },
    )
    .await;
    proxy.restore();
    eventually(
        "the waiter is queued again",
        Duration::from_secs(3),
        waiting,
    )
    .await;

    tracing::info!("phase: the holder releases; the retried acquire gets the lock");
    let held_token = held.token();
    held.release().await.unwrap();
    let bound = Duration::from_secs(3);
    let granted = within("the retried acquire", bound, queued).await;
    let granted = granted.expect("the task").expect("granted within the wait");
    assert!(granted.token() > held_token);
    assert_eq!(
        server.holder(name).await,
        Some((id, granted.token().0)),
        "the server does not show the waiter holding the lock"
    );
    assert_eq!(granted.fence(), Ok(granted.token()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_once_renews_now_and_a_lease_gone_from_the_server_is_lost() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let ttl = Duration::from_secs(30);
    let lease = client.lease(ttl).grant().await.unwrap();
    let timing = lease.timing();
    let before = lease.renewals().borrow().count;

    let left = lease.keep_alive_once().await.unwrap();
    let valid_for = ttl - timing.margin;
    assert!(left <= valid_for, "{left:?} left of {valid_for:?}");
    assert!(left > valid_for - Duration::from_secs(5), "{left:?}");
    assert_eq!(lease.renewals().borrow().count, before + 1);

    tracing::info!("phase: revoked behind the client's back");
    server.revoke(lease.id().0).await;
    let error = lease.keep_alive_once().await.unwrap_err();
    let Error::Lost(lost) = &error else {
        panic!("expected the lease lost, got {error:?}");
    };
    assert_eq!(lost.cause, LossCause::LeaseNotFound);
    assert_eq!(lease.check().unwrap_err().cause, LossCause::LeaseNotFound);
    let again = lease.keep_alive_once().await.unwrap_err();
    assert!(matches!(again, Error::Lost(_)), "{again:?}");
}
