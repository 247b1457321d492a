//! The one-shot API against a real server: a lease granted without a
//! keeper holds locks acquired and released by lease id; refusals come back
//! as typed errors carrying what the caller needs (the holder's token, the
//! token and lease presented, look-alike names); names, ttls and values
//! are refused before anything is sent; the fenced store, force release
//! and its incident record, events (remembered and followed), status and
//! membership; and a retry cap makes a call give up after one more try.

use leasehold_client::{
    owner_info, Client, ClientOptions, Consistency, Error, EventsQuery, FencedKey, ForceRelease,
    LeaseId, LockName, LockOptions, Token,
};
use leasehold_testkit::{within, Proxy, TestServer};
use std::time::Duration;
use tokio::time::Instant;

const TTL: Duration = Duration::from_secs(10);
/// Bound on anything that should be prompt on an idle loopback server.
const PROMPT: Duration = Duration::from_secs(5);

fn name(raw: &str) -> LockName {
    LockName::parse(raw).expect("a valid name")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_without_a_keeper_holds_locks_by_id() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let lock = name("t70/job");

    tracing::info!("phase: grant without a keeper; the lease is described");
    let owner = owner_info(Some("script".into()), vec![("team".into(), "ops".into())]);
    let granted = client.grant_lease(TTL, owner).await.unwrap();
    assert_eq!(granted.ttl, TTL);
    assert!(granted.revision.0 > 0);
    let info = client.lease_info(granted.lease).await.unwrap();
    assert_eq!(info.id, granted.lease.0);
    assert_eq!(
        info.owner.as_ref().map(|o| o.owner.as_str()),
        Some("script")
    );

    tracing::info!("phase: acquire by lease id; get and list show the holder");
    let options = LockOptions::default().fenced(true).metadata("job", "42");
    let acquired = client
        .acquire(granted.lease, &lock, &options)
        .await
        .unwrap();
    assert!(!acquired.already_held);
    let again = client
        .acquire(granted.lease, &lock, &options)
        .await
        .unwrap();
    assert!(again.already_held);
    assert_eq!(again.token, acquired.token);
    let seen = client.get_lock(&lock, Consistency::Linearizable).await;
    let holder = seen.unwrap().lock.and_then(|l| l.holder).expect("held");
    assert_eq!(
        (holder.lease, holder.token),
        (granted.lease.0, acquired.token.0)
    );
    assert!(holder.fenced);
    assert_eq!(holder.metadata.get("job").map(String::as_str), Some("42"));
    let listed = client.list_locks("t70/", Consistency::Stale).await.unwrap();
    let names: Vec<&str> = listed.locks.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["t70/job"]);

    tracing::info!("phase: another lease is told busy, naming the holder's token");
    let other = client.grant_lease(TTL, owner_info(None, vec![])).await;
    let other = other.unwrap().lease;
    let busy = client.acquire(other, &lock, &LockOptions::default()).await;
    assert!(
        matches!(&busy, Err(Error::Busy { name, holder_token }) if name == "t70/job" && *holder_token == Some(acquired.token)),
        "{busy:?}"
    );

    refusals_name_what_was_presented(&client, granted.lease, acquired.token).await;

    tracing::info!("phase: renew once, release, revoke");
    let renewal = client.renew_lease(granted.lease).await.unwrap();
    assert_eq!((renewal.lease, renewal.ttl), (granted.lease, TTL));
    assert!(renewal.revision > acquired.revision);
    let released = client.release(granted.lease, &lock, acquired.token).await;
    assert!(released.unwrap() > renewal.revision);
    assert_eq!(server.holder("t70/job").await, None);
    assert!(client.revoke_lease(granted.lease).await.unwrap().is_empty());
    let gone = client.lease_info(granted.lease).await;
    assert!(
        matches!(gone, Err(Error::LeaseNotFound { lease }) if lease == granted.lease),
        "{gone:?}"
    );
}

/// A release under the wrong token or lease, or of a mistyped name, is a
/// typed refusal that names what the caller presented and what is true.
async fn refusals_name_what_was_presented(client: &Client, lease: LeaseId, token: Token) {
    tracing::info!("phase: a wrong token is NotHolder, naming both tokens and the lease");
    let wrong = Token(token.0 + 1_000);
    let error = client.release(lease, &name("t70/job"), wrong).await;
    let error = error.unwrap_err();
    assert_eq!(
        error,
        Error::NotHolder {
            name: "t70/job".into(),
            holder_token: Some(token),
            lease: Some(lease),
            token: Some(wrong),
        }
    );
    let said = error.to_string();
    for named in [token.to_string(), wrong.to_string(), lease.to_string()] {
        assert!(said.contains(&named), "{said:?} does not name {named}");
    }

    tracing::info!("phase: a mistyped name is NoSuchLock with the look-alike");
    let error = client.release(lease, &name("t70/jbo"), token).await;
    assert!(
        matches!(&error, Err(Error::NoSuchLock { name, nearby }) if name == "t70/jbo" && nearby.contains(&"t70/job".to_owned())),
        "{error:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_are_refused_before_anything_is_sent() {
    let server = TestServer::start().await;
    let client = server.client().await;
    tracing::info!("phase: the server goes away; local checks still answer");
    drop(server);

    let error = client.grant_lease(Duration::from_millis(500), owner_info(None, vec![]));
    let error = within("a refused grant", PROMPT, error).await.unwrap_err();
    assert!(
        matches!(&error, Error::InvalidArgument { field, reason } if field == "ttl_ms" && reason.contains("TTL_MS_MIN")),
        "{error:?}"
    );
    let key = FencedKey::parse("cfg/big").unwrap();
    let big = vec![0u8; 70_000];
    let lock = name("t70/x");
    let put = client.fenced_put(&key, big, &lock, Token(1));
    let error = within("a refused put", PROMPT, put).await.unwrap_err();
    assert!(
        matches!(&error, Error::InvalidArgument { reason, .. } if reason.contains("FENCED_VALUE_BYTES_MAX")),
        "{error:?}"
    );
    let force = ForceRelease {
        expected_token: Token(1),
        reason: " ".into(),
        caller: "ops@host".into(),
        allow_unfenced: false,
        revoke_lease: false,
    };
    let refused = client.force_release(&lock, &force);
    let error = within("a refused force release", PROMPT, refused).await;
    assert!(
        matches!(&error, Err(Error::InvalidArgument { field, .. }) if field == "reason"),
        "{error:?}"
    );
    let long = "n".repeat(leasehold_core::limits::NAME_BYTES_MAX + 1);
    let error = LockName::parse(&long).map_err(Error::from).unwrap_err();
    assert!(error.to_string().contains("NAME_BYTES_MAX"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_store_force_release_and_the_incident_record() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let lock = name("t70/leader");
    let key = FencedKey::parse("t70/cfg").unwrap();
    let lease = client.grant_lease(TTL, owner_info(None, vec![])).await;
    let lease = lease.unwrap().lease;
    let fenced = LockOptions::default().fenced(true);
    let held = client.acquire(lease, &lock, &fenced).await.unwrap();

    tracing::info!("phase: the holder writes; a read sees value, token and lock");
    assert_eq!(
        client.fenced_get(&key, Consistency::Linearizable).await,
        Ok(None)
    );
    let written = client.fenced_put(&key, b"10.0.0.1".to_vec(), &lock, held.token);
    assert!(written.await.unwrap() > held.revision);
    let value = client.fenced_get(&key, Consistency::Linearizable).await;
    let value = value.unwrap().expect("written");
    assert_eq!(value.value, b"10.0.0.1");
    assert_eq!(
        (value.token, value.lock.as_str()),
        (held.token, "t70/leader")
    );

    tracing::info!("phase: a token that does not hold the lock is NotHolder");
    let wrong = Token(held.token.0 + 7);
    let refused = client.fenced_put(&key, b"x".to_vec(), &lock, wrong).await;
    assert!(
        matches!(&refused, Err(Error::NotHolder { holder_token, token, lease: None, .. }) if *holder_token == Some(held.token) && *token == Some(wrong)),
        "{refused:?}"
    );

    tracing::info!("phase: force release; the record keeps caller and reason");
    let force = ForceRelease {
        expected_token: held.token,
        reason: "INC-70 drill".into(),
        caller: "ops@bastion".into(),
        allow_unfenced: false,
        revoke_lease: false,
    };
    let forced = client.force_release(&lock, &force).await.unwrap();
    assert_eq!((forced.lease, forced.revoked_lease), (lease, false));
    assert_eq!(forced.released, ["t70/leader"]);
    let incidents = client.incidents().await.unwrap();
    let record = incidents.force_releases.last().expect("a record");
    assert_eq!(
        (record.name.as_str(), record.token),
        ("t70/leader", held.token.0)
    );
    assert_eq!(
        (record.caller.as_str(), record.reason.as_str()),
        ("ops@bastion", "INC-70 drill")
    );
    let stale = client.release(lease, &lock, held.token).await;
    assert!(stale.is_err(), "{stale:?}");
    let incidents = client.incidents().await.unwrap();
    let failed = incidents.failed_releases.last().expect("a failed release");
    assert_eq!(
        (failed.name.as_str(), failed.lease),
        ("t70/leader", lease.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_replayed_then_followed() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let lease = client.grant_lease(TTL, owner_info(None, vec![])).await;
    let lease = lease.unwrap().lease;
    let lock = name("t70e/a");
    let options = LockOptions::default();
    let first = client.acquire(lease, &lock, &options).await.unwrap();

    tracing::info!("phase: without follow, the remembered events, then the end");
    let query = EventsQuery {
        prefix: "t70e/".into(),
        ..EventsQuery::default()
    };
    let mut stream = client.events(&query).await.unwrap();
    let event = stream.next().await.unwrap().expect("the acquire");
    assert_eq!(
        (event.kind.as_str(), event.lock.as_str()),
        ("acquired", "t70e/a")
    );
    assert_eq!((event.lease, event.token), (lease.0, first.token.0));
    assert_eq!(within("the end", PROMPT, stream.next()).await, Ok(None));

    tracing::info!("phase: with follow, a new event arrives as it happens");
    let query = EventsQuery {
        follow: true,
        replay: 1,
        ..query
    };
    let mut stream = client.events(&query).await.unwrap();
    let replayed = within("the replay", PROMPT, stream.next()).await.unwrap();
    assert_eq!(replayed.map(|e| e.token), Some(first.token.0));
    let released = client.release(lease, &lock, first.token).await;
    assert!(released.is_ok(), "{released:?}");
    let live = within("the release event", PROMPT, stream.next()).await;
    let live = live.unwrap().expect("an event");
    assert_eq!(
        (live.kind.as_str(), live.token),
        ("released", first.token.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_and_membership() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let status = client.status().await.unwrap();
    assert_eq!(status.state, "Leader");
    assert_eq!(status.leader, status.node_id);
    assert_eq!(status.members.len(), 1);
    let error = client.remove_member(99).await.unwrap_err();
    assert!(
        matches!(&error, Error::InvalidArgument { reason, .. } if reason.contains("not a member")),
        "{error:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capped_retry_gives_up_after_one_more_try() {
    // The cap is told from the budget by the time it takes: capped, the
    // call ends after two attempts of at most CALL_TIMEOUT each; uncapped,
    // it would retry until the 30 s budget is spent. The bound between
    // leaves a loaded machine ample room (a CI run once stalled 5 s here).
    const CALL_TIMEOUT: Duration = Duration::from_secs(2);
    const BUDGET: Duration = Duration::from_secs(30);
    let server = TestServer::start().await;
    let proxy = Proxy::start(server.addr).await;
    let options = ClientOptions {
        seed: Some(7),
        call_timeout: CALL_TIMEOUT,
        retry_budget: BUDGET,
        retries_max: Some(1),
        ..ClientOptions::default()
    };
    let client = Client::connect_with([proxy.endpoint()], options).await;
    let client = client.expect("connects through the proxy");
    assert!(client.status().await.is_ok());

    tracing::info!("phase: the endpoint goes away; one retry, then the error");
    proxy.cut();
    let started = Instant::now();
    let error = within("the capped call", BUDGET, client.status()).await;
    let took = started.elapsed();
    tracing::info!(?took, ?error, "measured: gave up");
    assert!(matches!(error, Err(Error::Unavailable { .. })), "{error:?}");
    assert!(took < BUDGET / 2, "took {took:?}: retried past the cap");
    assert!(proxy.refused() >= 1, "the retry did not reconnect");
}
