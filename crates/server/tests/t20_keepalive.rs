//! Keep-alives: the stream answers every renewal by seq, reports a definite
//! failure in-band and stays open; a lease that is renewed does not expire,
//! one that is not renewed does.

mod common;

use common::{acquire, grant, reason, TestServer};
use leasehold_proto::v1::{GetLeaseRequest, KeepAliveRequest, RevokeRequest};
use std::time::Duration;
use tokio_stream::StreamExt;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_answers_each_renewal_and_reports_a_gone_lease_in_band() {
    let server = TestServer::start().await;
    let mut leases = server.leases().await;
    let lease = grant(&mut leases, 5_000).await;
    let (sender, requests) = tokio::sync::mpsc::channel(16);
    let mut responses = leases
        .keep_alive_stream(tokio_stream::wrappers::ReceiverStream::new(requests))
        .await
        .expect("open stream")
        .into_inner();
    for seq in 1..=8 {
        sender.send(KeepAliveRequest { lease, seq }).await.unwrap();
    }
    let mut seen = Vec::new();
    for _ in 0..8 {
        let response = responses.next().await.expect("a response").expect("ok");
        assert!(response.error.is_none(), "{response:?}");
        assert_eq!(response.ttl_ms, 5_000);
        seen.push(response.seq);
    }
    seen.sort();
    assert_eq!(seen, (1..=8).collect::<Vec<_>>());

    leases
        .revoke(RevokeRequest {
            lease,
            request_id: String::new(),
        })
        .await
        .unwrap();
    sender
        .send(KeepAliveRequest { lease, seq: 9 })
        .await
        .unwrap();
    let response = responses.next().await.expect("a response").expect("ok");
    assert_eq!(response.seq, 9);
    assert_eq!(response.error.expect("an error").reason, "LeaseNotFound");

    let other = grant(&mut leases, 5_000).await;
    sender
        .send(KeepAliveRequest {
            lease: other,
            seq: 10,
        })
        .await
        .unwrap();
    let response = responses
        .next()
        .await
        .expect("stream still open")
        .expect("ok");
    assert!(response.error.is_none());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewed_lease_outlives_its_ttl_and_an_abandoned_one_expires() {
    let (server, mut leases, mut locks) = TestServer::start_with_clients().await;
    let kept = grant(&mut leases, 1_000).await;
    let abandoned = grant(&mut leases, 1_000).await;
    locks
        .acquire(acquire(abandoned, "abandoned", 0))
        .await
        .unwrap();
    let started = tokio::time::Instant::now();
    // Renew `kept` every 250 ms for 2.5 ttl; meanwhile `abandoned` must go.
    while started.elapsed() < Duration::from_millis(2_500) {
        leases
            .keep_alive(KeepAliveRequest {
                lease: kept,
                seq: 0,
            })
            .await
            .expect("kept lease renews");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let gone = leases
        .get(GetLeaseRequest { lease: abandoned })
        .await
        .expect_err("abandoned lease expired");
    assert_eq!(reason(&gone), "LeaseNotFound");
    let renewal = leases
        .keep_alive(KeepAliveRequest {
            lease: abandoned,
            seq: 0,
        })
        .await
        .expect_err("expired lease cannot renew");
    assert_eq!(reason(&renewal), "LeaseExpired");
    // Its lock is free again.
    locks
        .acquire(acquire(kept, "abandoned", 0))
        .await
        .expect("free after expiry");
    server.stop().await;
}
