//! Retried mutations (same request id) return their first outcome over the
//! wire: a grant whose reply was lost is never orphaned, and a retried
//! acquire, release or revoke does not act twice (docs/DESIGN.md guarantee 8).

use leasehold_proto::v1::{AcquireRequest, GrantRequest, ReleaseRequest, RevokeRequest};
use leasehold_testkit::grpc::{acquire, release};
use leasehold_testkit::TestServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_with_the_same_request_id_get_the_first_outcome() {
    let (server, mut leases, mut locks) = TestServer::start_with_clients().await;

    let grant = GrantRequest {
        ttl_ms: 10_000,
        request_id: "grant-1".into(),
        ..Default::default()
    };
    let first = leases
        .grant(grant.clone())
        .await
        .unwrap()
        .into_inner()
        .lease;
    let retried = leases.grant(grant).await.unwrap().into_inner().lease;
    assert_eq!(
        first, retried,
        "a retried grant found its lease instead of making an orphan"
    );

    let take = AcquireRequest {
        request_id: "acquire-1".into(),
        ..acquire(first, "idem", 0)
    };
    let token = locks
        .acquire(take.clone())
        .await
        .unwrap()
        .into_inner()
        .token;
    let put_back = ReleaseRequest {
        request_id: "release-1".into(),
        ..release(first, "idem", token)
    };
    locks.release(put_back.clone()).await.unwrap();
    // The retried acquire replays "acquired with `token`"; it does not take the lock again.
    assert_eq!(locks.acquire(take).await.unwrap().into_inner().token, token);
    assert!(
        server.lock_info("idem").await.is_none(),
        "the lock stayed free"
    );
    // The retried release replays "released", not NoSuchLock.
    locks
        .release(put_back)
        .await
        .expect("a retried release succeeds again");

    let revoke = RevokeRequest {
        lease: first,
        request_id: "revoke-1".into(),
    };
    leases.revoke(revoke.clone()).await.unwrap();
    leases
        .revoke(revoke)
        .await
        .expect("a retried revoke succeeds again");
    server.stop().await;
}

/// A request id reused for another operation of the same lease replays the
/// first operation's outcome in the core; the release that gets an
/// acquire's outcome answers with an invalid `request_id` naming the
/// mistake (it was an "internal error" before), and acts on nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_id_reused_for_another_operation_is_an_invalid_request_id() {
    let (server, mut leases, mut locks) = TestServer::start_with_clients().await;
    let lease = leasehold_testkit::grpc::grant(&mut leases, 10_000).await;
    let take = AcquireRequest {
        request_id: "reused".into(),
        ..acquire(lease, "reuse", 0)
    };
    let token = locks.acquire(take).await.unwrap().into_inner().token;
    let put_back = ReleaseRequest {
        request_id: "reused".into(),
        ..release(lease, "reuse", token)
    };
    let refused = locks
        .release(put_back)
        .await
        .expect_err("reused request id");
    assert_eq!(leasehold_testkit::grpc::reason(&refused), "InvalidArgument");
    assert!(
        refused.message().contains("request_id") && refused.message().contains("another operation"),
        "{}",
        refused.message()
    );
    let holder = server.lock_info("reuse").await.expect("still held").holder;
    assert_eq!(
        holder.map(|h| h.token),
        Some(token),
        "the lock is still held"
    );
    server.stop().await;
}
