//! Typed reasons from a real server: a stale fenced put and a force release
//! of an unfenced holder come back as `Error::StaleToken` and
//! `Error::Unfenced` with their fields. The client has no fenced put or
//! force release of its own yet, so the calls go through the raw
//! `leasehold-proto` stubs and their statuses through `Error::from`.

use leasehold_client::{Error, Reason, Token};
use leasehold_proto::v1::fenced_store_client::FencedStoreClient;
use leasehold_proto::v1::{FencedPutRequest, ForceReleaseRequest};
use leasehold_testkit::TestServer;
use std::time::Duration;

fn put(lock: &str, token: Token, key: &str) -> FencedPutRequest {
    FencedPutRequest {
        lock: lock.into(),
        token: token.0,
        key: key.into(),
        value: b"v".to_vec(),
        request_id: String::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_put_and_an_unfenced_force_release_are_typed() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let lease = client.lease(Duration::from_secs(10)).grant().await.unwrap();
    let older = lease.lock("t70/older").acquire().await.unwrap();
    let newer = lease.lock("t70/newer").acquire().await.unwrap();
    assert!(older.token() < newer.token());

    tracing::info!("phase: the newer token writes the key, then the older one tries");
    let mut store = FencedStoreClient::new(server.channel().await);
    store
        .put(put("t70/newer", newer.token(), "t70/key"))
        .await
        .expect("the newer holder writes");
    let status = store
        .put(put("t70/older", older.token(), "t70/key"))
        .await
        .unwrap_err();
    let error = Error::from(status);
    assert_eq!(error.reason(), Some(Reason::StaleToken));
    let Error::StaleToken {
        presented,
        highest,
        message,
        ..
    } = &error
    else {
        panic!("expected StaleToken, got {error:?}");
    };
    assert_eq!((*presented, *highest), (older.token(), newer.token()));
    assert!(message.contains("t70/key"), "{message}");

    tracing::info!("phase: a force release of the unfenced holder, without the override");
    let force = ForceReleaseRequest {
        name: "t70/older".into(),
        expected_token: older.token().0,
        reason: "t70: the holder is stuck".into(),
        caller: "t70@test".into(),
        ..Default::default()
    };
    let status = server.locks().await.force_release(force).await.unwrap_err();
    let error = Error::from(status);
    assert_eq!(error.reason(), Some(Reason::Unfenced));
    let Error::Unfenced { message, .. } = &error else {
        panic!("expected Unfenced, got {error:?}");
    };
    assert!(message.contains("t70/older"), "{message}");
    assert!(message.contains("allow_unfenced"), "{message}");
    assert_eq!(
        server.holder("t70/older").await,
        Some((lease.id().0, older.token().0)),
        "the refused force release freed the lock"
    );
}
