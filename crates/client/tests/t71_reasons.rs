//! Typed reasons from a real server: a stale fenced put and a force release
//! of an unfenced holder come back as `Error::StaleToken` and
//! `Error::Unfenced` with their fields: through the raw `leasehold-proto`
//! stubs and `Error::from` (as a caller of the stubs reads them), and
//! through the client's one-shot calls, which also fill in the key and the
//! lock the call named.

use leasehold_client::{Error, FencedKey, ForceRelease, LockName, Reason, Token};
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_one_shot_calls_name_the_key_and_the_lock() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let lease = client.lease(Duration::from_secs(10)).grant().await.unwrap();
    let older = lease.lock("t71/older").acquire().await.unwrap();
    let newer = lease.lock("t71/newer").acquire().await.unwrap();
    let key = FencedKey::parse("t71/key").unwrap();
    let (older_name, newer_name) = (
        LockName::parse("t71/older").unwrap(),
        LockName::parse("t71/newer").unwrap(),
    );
    client
        .fenced_put(&key, b"new".to_vec(), &newer_name, newer.token())
        .await
        .expect("the newer holder writes");
    let error = client
        .fenced_put(&key, b"old".to_vec(), &older_name, older.token())
        .await
        .unwrap_err();
    let Error::StaleToken {
        key: named_key,
        lock,
        presented,
        highest,
        ..
    } = &error
    else {
        panic!("expected StaleToken, got {error:?}");
    };
    assert_eq!(
        (named_key.as_str(), lock.as_str()),
        ("t71/key", "t71/older")
    );
    assert_eq!((*presented, *highest), (older.token(), newer.token()));

    let force = ForceRelease {
        expected_token: older.token(),
        reason: "t71: the holder is stuck".into(),
        caller: "t71@test".into(),
        allow_unfenced: false,
        revoke_lease: false,
    };
    let error = client.force_release(&older_name, &force).await.unwrap_err();
    let Error::Unfenced { name, .. } = &error else {
        panic!("expected Unfenced, got {error:?}");
    };
    assert_eq!(name, "t71/older");
    assert_eq!(
        server.holder("t71/older").await,
        Some((lease.id().0, older.token().0)),
        "the refused force release freed the lock"
    );
}
