//! Which route acquires and releases take, read through the client's
//! `call_attempts_total{call, route}` counter: with the default transport
//! they ride the lease's session stream once it is open, with
//! `Transport::Unary` they are unary calls, and either way they answer
//! alike (granted, busy, wait timeout, queued then granted, released,
//! already expired). An acquire abandoned mid-wait on the stream leaves the
//! server's queue, as a cancelled unary call does.
//!
//! The recorder is process-global, so this binary holds a single test, and
//! the recorder is installed before the in-process server tries to install
//! its own.

use leasehold_client::metrics::CALL_ATTEMPTS_TOTAL;
use leasehold_client::{Client, ClientOptions, Error, Lease, ReleaseOutcome, Transport};
use leasehold_testkit::{eventually, TestServer};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// Attempts counted so far, by (call, route).
type Totals = Mutex<HashMap<(String, String), u64>>;

/// Attempts counted so far of `call` by `route`, accumulated over
/// snapshots (each drains what it returns); installs the recorder on first use.
fn attempts(call: &str, route: &str) -> u64 {
    static RECORDER: OnceLock<(Snapshotter, Totals)> = OnceLock::new();
    let (snapshotter, totals) = RECORDER.get_or_init(|| {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::set_global_recorder(recorder).expect("no other recorder installed yet");
        (snapshotter, Mutex::default())
    });
    let mut totals = totals.lock().unwrap();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let (key, DebugValue::Counter(n)) = (key.key(), value) else {
            continue;
        };
        if key.name() != CALL_ATTEMPTS_TOTAL {
            continue;
        }
        let label = |name: &str| {
            let found = key.labels().find(|l| l.key() == name);
            found.map(|l| l.value().to_owned()).unwrap_or_default()
        };
        *totals.entry((label("call"), label("route"))).or_default() += n;
    }
    totals
        .get(&(call.into(), route.into()))
        .copied()
        .unwrap_or(0)
}

async fn client_with(server: &TestServer, transport: Transport) -> Client {
    let options = ClientOptions {
        seed: Some(7),
        transport,
        ..ClientOptions::default()
    };
    Client::connect_with([&server.endpoint], options)
        .await
        .expect("client connects")
}

/// A lease whose session stream is open: renewed once now over it.
async fn lease_on_its_stream(client: &Client) -> Lease {
    let lease = client.lease(Duration::from_secs(30)).grant().await.unwrap();
    eventually(
        "the lease's stream is open",
        Duration::from_secs(3),
        || async {
            let before = attempts("KeepAlive", "session");
            lease.keep_alive_once().await.unwrap();
            attempts("KeepAlive", "session") > before
        },
    )
    .await;
    lease
}

/// Acquires and releases every way that answers differently, on locks
/// under `prefix`; asserts each answer.
async fn exercise(server: &TestServer, first: &Lease, second: &Lease, prefix: &str) {
    let name = format!("{prefix}/shared");
    let held = first.lock(&name).acquire().await.unwrap();
    let token = held.token();
    let busy = second.lock(&name).acquire().await.unwrap_err();
    let expected = Error::Busy {
        name: name.clone(),
        holder_token: Some(token),
    };
    assert_eq!(busy, expected);
    let short = Duration::from_millis(200);
    let timed_out = second.lock(&name).wait(short).acquire().await.unwrap_err();
    assert!(
        matches!(&timed_out, Error::WaitTimeout { name: n, waited } if *n == name && *waited >= short),
        "{timed_out:?}"
    );

    let queued = second.lock(&name).wait(Duration::from_secs(5)).acquire();
    let (released, granted) = tokio::join!(
        async {
            let id = second.id().0;
            eventually("the second lease queues", Duration::from_secs(3), || {
                server.is_waiting(&name, id)
            })
            .await;
            held.release().await
        },
        queued
    );
    assert_eq!(released.unwrap(), ReleaseOutcome::Released);
    let granted = granted.unwrap();
    assert!(granted.token() > token);
    assert_eq!(granted.release().await.unwrap(), ReleaseOutcome::Released);
    assert_eq!(server.lock_info(&name).await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquires_and_releases_ride_the_session_and_answer_as_unary_calls_do() {
    attempts("", "");
    let server = TestServer::start().await;

    tracing::info!("phase: the default transport sends on the leases' streams");
    let client = client_with(&server, Transport::Session).await;
    let (first, second) = (
        lease_on_its_stream(&client).await,
        lease_on_its_stream(&client).await,
    );
    exercise(&server, &first, &second, "t51/session").await;
    assert_eq!(attempts("Acquire", "unary"), 0);
    assert_eq!(attempts("Release", "unary"), 0);
    assert!(attempts("Acquire", "session") >= 4);
    assert!(attempts("Release", "session") >= 2);

    tracing::info!("phase: a release after the lease is gone, on the stream");
    let guard = first.lock("t51/session/gone").acquire().await.unwrap();
    server.revoke(first.id().0).await;
    assert_eq!(
        guard.release().await.unwrap(),
        ReleaseOutcome::AlreadyExpired
    );
    assert_eq!(attempts("Release", "unary"), 0);

    tracing::info!("phase: an acquire abandoned mid-wait leaves the server's queue");
    let holder = lease_on_its_stream(&server.client().await).await;
    let name = "t51/session/abandoned";
    let held = holder.lock(name).acquire().await.unwrap();
    let wait = second.lock(name).wait(Duration::from_secs(10)).acquire();
    let id = second.id().0;
    let abandon = async {
        eventually("the acquire queues", Duration::from_secs(3), || {
            server.is_waiting(name, id)
        })
        .await;
    };
    tokio::select! {
        acquired = wait => panic!("the acquire ended while the lock was held: {acquired:?}"),
        () = abandon => {}
    }
    eventually(
        "the abandoned acquire leaves the queue",
        Duration::from_secs(3),
        || async { !server.is_waiting(name, id).await },
    )
    .await;
    assert_eq!(held.release().await.unwrap(), ReleaseOutcome::Released);
    assert_eq!(
        server.lock_info(name).await,
        None,
        "granted to the abandoned acquire"
    );
    assert_eq!(attempts("Acquire", "unary"), 0);
    let after = second.lock("t51/session/after").acquire().await.unwrap();
    assert_eq!(after.release().await.unwrap(), ReleaseOutcome::Released);
    assert!(second.check().is_ok());

    tracing::info!("phase: Transport::Unary sends unary calls, with the same answers");
    let (session_acquires, session_releases) = (
        attempts("Acquire", "session"),
        attempts("Release", "session"),
    );
    let client = client_with(&server, Transport::Unary).await;
    let first = client.lease(Duration::from_secs(30)).grant().await.unwrap();
    let second = client.lease(Duration::from_secs(30)).grant().await.unwrap();
    exercise(&server, &first, &second, "t51/unary").await;
    assert_eq!(attempts("Acquire", "session"), session_acquires);
    assert_eq!(attempts("Release", "session"), session_releases);
    assert!(attempts("Acquire", "unary") >= 4);
    assert!(attempts("Release", "unary") >= 2);
}
