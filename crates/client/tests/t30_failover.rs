//! Endpoints and connections: failing over to another endpoint when one goes
//! away, skipping dead endpoints at connect, naming them when none answers,
//! and reconciling after a reconnect (a lock the server says the lease
//! holds, which no guard knows of, is released).

use leasehold_client::{Client, Error};
use leasehold_testkit::{client, dead_addr, eventually, Proxy, TestServer};
use std::time::Duration;
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(1);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_survives_losing_one_endpoint_by_failing_over_to_the_next() {
    let server = TestServer::start().await;
    let a = Proxy::start(server.addr).await;
    let b = Proxy::start(server.addr).await;
    let client = client(&[a.endpoint(), b.endpoint()]).await;
    assert_eq!(client.endpoint(), a.endpoint());
    let lease = client.lease(TTL).grant().await.unwrap();
    let guard = lease.lock("t30/kept").acquire().await.unwrap();
    assert_eq!(b.forwarded(), 0, "endpoint B was used before A failed");

    tracing::info!("phase: endpoint A goes away for good");
    a.cut();
    let until = Instant::now() + TTL * 2 + Duration::from_millis(500);
    while Instant::now() < until {
        assert_eq!(guard.fence(), Ok(guard.token()), "lost despite endpoint B");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(client.endpoint(), b.endpoint());
    assert!(b.forwarded() > 0, "nothing went through endpoint B");

    tracing::info!("phase: unary calls go through B too");
    let other = lease.lock("t30/other").acquire().await.unwrap();
    let held = Some((lease.id().0, other.token().0));
    assert_eq!(server.holder("t30/other").await, held);
    let held = Some((lease.id().0, guard.token().0));
    assert_eq!(server.holder("t30/kept").await, held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_skips_a_dead_endpoint_and_names_them_when_none_answers() {
    let server = TestServer::start().await;
    let dead = dead_addr();

    let client = Client::connect([format!("http://{dead}"), server.endpoint.clone()])
        .await
        .expect("connects to the live endpoint");
    assert_eq!(client.endpoint(), server.endpoint);
    let lease = client.lease(TTL).grant().await.unwrap();
    assert!(server.lease_exists(lease.id().0).await);

    let other_dead = dead_addr();
    let error = Client::connect([dead.to_string(), other_dead.to_string()])
        .await
        .unwrap_err();
    let Error::Unavailable { message } = &error else {
        panic!("expected Unavailable, got {error:?}");
    };
    assert!(message.contains(&dead.to_string()), "{message}");
    assert!(message.contains(&other_dead.to_string()), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_reconnect_locks_no_guard_knows_are_released_and_guarded_ones_kept() {
    let server = TestServer::start().await;
    let proxy = Proxy::start(server.addr).await;
    let client = client(&[proxy.endpoint()]).await;
    let lease = client.lease(Duration::from_secs(2)).grant().await.unwrap();
    let id = lease.id().0;
    let guard = lease.lock("t30/guarded").acquire().await.unwrap();

    tracing::info!("phase: an acquire for this lease that no guard knows of");
    let orphan = server.acquire_raw(id, "t30/orphan").await;
    assert_eq!(server.holder("t30/orphan").await, Some((id, orphan)));

    tracing::info!("phase: the connection drops; the keeper reconnects");
    proxy.cut();
    eventually("the keeper tries to reconnect", TTL, || async {
        proxy.refused() > 0
    })
    .await;
    proxy.restore();

    tracing::info!("phase: the orphan is released, the guarded lock kept");
    eventually("the orphan is released", Duration::from_secs(3), || async {
        server.lock_info("t30/orphan").await.is_none()
    })
    .await;
    let held = Some((id, guard.token().0));
    assert_eq!(server.holder("t30/guarded").await, held);
    assert_eq!(guard.fence(), Ok(guard.token()));
    assert!(lease.check().is_ok());
}
