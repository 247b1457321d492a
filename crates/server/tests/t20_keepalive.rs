//! Keep-alives: the stream answers every renewal by seq, reports a definite
//! failure in-band and stays open; a lease that is renewed does not expire,
//! one that is not renewed does.

use leasehold_proto::v1::{GetLeaseRequest, KeepAliveRequest, RevokeRequest};
use leasehold_testkit::grpc::{acquire, acquire_now, grant, reason};
use leasehold_testkit::{eventually, TestServer};
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
        sender
            .send(KeepAliveRequest {
                lease,
                seq,
                holdings_digest: 0,
            })
            .await
            .unwrap();
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
        .send(KeepAliveRequest {
            lease,
            seq: 9,
            holdings_digest: 0,
        })
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
            holdings_digest: 0,
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
                holdings_digest: 0,
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
            holdings_digest: 0,
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

/// The holdings a unary keep-alive of `lease` reports: (name, token) held,
/// and (name, token, kind, how) ended by the server.
async fn holdings(
    leases: &mut leasehold_proto::v1::lease_client::LeaseClient<tonic::transport::Channel>,
    lease: u64,
) -> (Vec<(String, u64)>, Vec<(String, u64, String, String)>) {
    let reply = leases
        .keep_alive(KeepAliveRequest {
            lease,
            seq: 1,
            holdings_digest: 0,
        })
        .await
        .expect("renewed")
        .into_inner();
    let holdings = reply.holdings.expect("a renewal lists the holdings");
    let held = holdings
        .held
        .into_iter()
        .map(|h| (h.name, h.token))
        .collect();
    let ended = holdings
        .ended
        .into_iter()
        .map(|e| (e.name, e.token, e.kind, e.how))
        .collect();
    (held, ended)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_lists_what_the_lease_holds_and_how_the_server_ended_the_rest() {
    let (server, mut leases, mut locks) = TestServer::start_with_clients().await;
    let lease = grant(&mut leases, 30_000).await;
    let kept = acquire_now(&mut locks, lease, "t20/kept").await;
    let forced = locks
        .acquire(leasehold_proto::v1::AcquireRequest {
            fenced: true,
            ..acquire(lease, "t20/forced", 0)
        })
        .await
        .unwrap()
        .into_inner()
        .token;
    let capped = locks
        .acquire(leasehold_proto::v1::AcquireRequest {
            max_hold_ms: 1_000,
            ..acquire(lease, "t20/capped", 0)
        })
        .await
        .unwrap()
        .into_inner()
        .token;
    let (held, ended) = holdings(&mut leases, lease).await;
    assert_eq!(
        held,
        [
            ("t20/capped".to_owned(), capped),
            ("t20/forced".to_owned(), forced),
            ("t20/kept".to_owned(), kept)
        ]
    );
    assert!(ended.is_empty(), "{ended:?}");

    // An operator frees one lock; the max hold ends another. The lease lives.
    locks
        .force_release(leasehold_proto::v1::ForceReleaseRequest {
            name: "t20/forced".into(),
            expected_token: forced,
            reason: "INC-9 drill".into(),
            caller: "ops@bastion".into(),
            ..Default::default()
        })
        .await
        .expect("force released");
    eventually("the max hold to end", Duration::from_secs(5), || async {
        server.lock_info("t20/capped").await.is_none()
    })
    .await;
    let (held, ended) = holdings(&mut leases, lease).await;
    assert_eq!(held, [("t20/kept".to_owned(), kept)]);
    assert_eq!(ended.len(), 2, "{ended:?}");
    let (name, token, kind, how) = &ended[0];
    assert_eq!(
        (name.as_str(), *token, kind.as_str()),
        ("t20/forced", forced, "force-released")
    );
    assert!(
        how.contains("ops@bastion") && how.contains("INC-9 drill"),
        "{how}"
    );
    let (name, token, kind, how) = &ended[1];
    assert_eq!(
        (name.as_str(), *token, kind.as_str()),
        ("t20/capped", capped, "expired")
    );
    assert!(how.contains("max hold"), "{how}");
}

/// A renewal carrying the digest of exactly the holds the lease has leaves
/// the list out (a lease of a thousand locks is not listed at every
/// renewal); a digest that differs, or none, gets the list; the digest of
/// no holds gets none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_that_knows_the_holds_is_not_told_them_again() {
    let (server, mut leases, mut locks) = TestServer::start_with_clients().await;
    let lease = grant(&mut leases, 30_000).await;
    let a = acquire_now(&mut locks, lease, "t20/digest/a").await;
    let b = acquire_now(&mut locks, lease, "t20/digest/b").await;
    let renew = |holdings_digest| {
        let request = KeepAliveRequest {
            lease,
            seq: 2,
            holdings_digest,
        };
        let mut leases = leases.clone();
        async move {
            leases
                .keep_alive(request)
                .await
                .expect("renewed")
                .into_inner()
        }
    };
    let both = leasehold_core::holdings_digest([("t20/digest/b", b), ("t20/digest/a", a)]);
    assert_eq!(renew(both).await.holdings, None);
    let one = leasehold_core::holdings_digest([("t20/digest/a", a)]);
    let listed = renew(one)
        .await
        .holdings
        .expect("a stale digest gets the list");
    assert_eq!(listed.held.len(), 2);
    let listed = renew(0).await.holdings.expect("no digest gets the list");
    assert_eq!(listed.held.len(), 2);
    // A renewer that knows of no hold (attached to the lease, its locks
    // taken elsewhere) has none to lose: no list, although the lease holds two.
    let knows_none = leasehold_core::holdings_digest([]);
    assert_eq!(knows_none, leasehold_core::NO_HOLDS_DIGEST);
    assert_eq!(renew(knows_none).await.holdings, None);
    server.stop().await;
}
