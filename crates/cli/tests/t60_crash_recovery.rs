//! Durability across kill -9 (docs/DESIGN.md §2.2): eight clients acquire and
//! release under load, the server is killed mid-load and restarted on the
//! same data directory. Every acknowledged, unreleased grant must still be
//! held with its token, and every new grant must carry a token higher than
//! every token acknowledged before the crash.

mod common;

use common::{free_port, wait_for, Server};
use leasehold_proto::v1::lease_client::LeaseClient;
use leasehold_proto::v1::lock_client::LockClient;
use leasehold_proto::v1::{
    AcquireRequest, GetLockRequest, GrantRequest, Holder, ReleaseRequest, RevokeRequest,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tonic::transport::Channel;

const WORKERS: usize = 8;
const NAMES_PER_WORKER: usize = 4;
/// Long enough that no lease can expire during the test.
const LEASE_TTL_MS: u64 = 60_000;
/// Kill once this many operations were acknowledged (or after `LOAD_TIME`).
const ACKS_BEFORE_KILL: usize = 300;
const LOAD_TIME: Duration = Duration::from_secs(2);
const RPC_TIMEOUT: Duration = Duration::from_secs(5);

/// What one worker knows about one of its locks.
#[derive(Debug, Default, Clone)]
struct NameRecord {
    name: String,
    /// Every token acknowledged for this name.
    acked: Vec<u64>,
    /// Acknowledged and not (acknowledged) released.
    held: Option<u64>,
    /// A release was sent for this token and not acknowledged.
    release_in_flight: Option<u64>,
    /// An acquire was sent and not acknowledged.
    acquire_in_flight: bool,
}

/// One worker's outcome.
#[derive(Debug)]
struct Worker {
    lease: u64,
    names: Vec<NameRecord>,
    /// When the worker's first failure happened, and what it was.
    failed: Option<(Instant, String)>,
}

async fn channel(endpoint: &str) -> Channel {
    Channel::from_shared(endpoint.to_owned())
        .expect("endpoint")
        .connect()
        .await
        .expect("connect")
}

async fn bounded<T>(
    call: impl std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
) -> Result<T, String> {
    match tokio::time::timeout(RPC_TIMEOUT, call).await {
        Ok(Ok(reply)) => Ok(reply.into_inner()),
        Ok(Err(status)) => Err(format!("{:?}: {}", status.code(), status.message())),
        Err(_) => Err("timed out".into()),
    }
}

async fn work(endpoint: String, id: usize, acks: Arc<AtomicUsize>) -> Worker {
    let ch = channel(&endpoint).await;
    let (mut leases, mut locks) = (LeaseClient::new(ch.clone()), LockClient::new(ch));
    let grant = GrantRequest {
        ttl_ms: LEASE_TTL_MS,
        request_id: format!("t60-grant-{id}"),
        ..Default::default()
    };
    let lease = bounded(leases.grant(grant)).await.expect("grant").lease;
    let mut names: Vec<NameRecord> = (0..NAMES_PER_WORKER)
        .map(|k| NameRecord {
            name: format!("crash/{id}/{k}"),
            ..Default::default()
        })
        .collect();
    let started = Instant::now();
    for cycle in 0.. {
        // Hard bound in case the kill never comes.
        if started.elapsed() > Duration::from_secs(30) {
            break;
        }
        let record = &mut names[cycle % NAMES_PER_WORKER];
        let request_id = format!("t60-{id}-{cycle}");
        let outcome = match record.held {
            Some(token) => {
                record.release_in_flight = Some(token);
                let request = ReleaseRequest {
                    lease,
                    name: record.name.clone(),
                    token,
                    request_id,
                };
                bounded(locks.release(request)).await.map(|_| {
                    record.held = None;
                    record.release_in_flight = None;
                })
            }
            None => {
                record.acquire_in_flight = true;
                let request = AcquireRequest {
                    lease,
                    name: record.name.clone(),
                    request_id,
                    ..Default::default()
                };
                bounded(locks.acquire(request)).await.map(|reply| {
                    record.held = Some(reply.token);
                    record.acked.push(reply.token);
                    record.acquire_in_flight = false;
                })
            }
        };
        if let Err(err) = outcome {
            return Worker {
                lease,
                names,
                failed: Some((Instant::now(), err)),
            };
        }
        acks.fetch_add(1, Ordering::Relaxed);
    }
    Worker {
        lease,
        names,
        failed: None,
    }
}

/// The holder of `name` after the restart (None: free or unknown).
async fn holder(locks: &mut LockClient<Channel>, name: &str) -> Option<Holder> {
    let request = GetLockRequest {
        name: name.into(),
        stale: false,
    };
    match tokio::time::timeout(RPC_TIMEOUT, locks.get(request))
        .await
        .expect("get timed out")
    {
        Ok(reply) => reply.into_inner().lock.and_then(|l| l.holder),
        Err(status) if status.code() == tonic::Code::NotFound => None,
        Err(status) => {
            let reason = status
                .metadata()
                .get("leasehold-reason")
                .map(|v| v.to_str().unwrap_or(""));
            assert_eq!(reason, Some("NoSuchLock"), "get {name} failed: {status:?}");
            None
        }
    }
}

#[test]
fn t60_crash_recovery() {
    let data = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let mut server = Server::start_in(data.path(), port);
    let endpoint = server.endpoint();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");

    eprintln!("phase: load with {WORKERS} clients");
    let acks = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..WORKERS)
        .map(|id| runtime.spawn(work(endpoint.clone(), id, acks.clone())))
        .collect();
    let load_started = Instant::now();
    wait_for("load to build up", Duration::from_secs(20), || {
        let n = acks.load(Ordering::Relaxed);
        (n >= ACKS_BEFORE_KILL || (n > 0 && load_started.elapsed() >= LOAD_TIME)).then_some(())
    });

    eprintln!("phase: kill -9 mid-load");
    let killed = Instant::now();
    server.kill9();
    let workers: Vec<Worker> = runtime.block_on(async {
        let mut workers = Vec::new();
        for handle in handles {
            let worker = tokio::time::timeout(Duration::from_secs(15), handle)
                .await
                .expect("a worker did not stop after the kill")
                .expect("worker panicked");
            workers.push(worker);
        }
        workers
    });
    let acked_total: usize = workers
        .iter()
        .flat_map(|w| &w.names)
        .map(|r| r.acked.len())
        .sum();
    eprintln!(
        "measured: {} operations acknowledged ({acked_total} grants) in {:?} before the kill",
        acks.load(Ordering::Relaxed),
        killed - load_started
    );
    for w in &workers {
        let (at, err) = w
            .failed
            .as_ref()
            .expect("a worker finished without seeing the crash");
        assert!(*at >= killed, "a worker failed before the kill: {err}");
    }

    eprintln!("phase: restart on the same data directory");
    let server = Server::start_in(data.path(), port);
    runtime.block_on(verify(&server.endpoint(), &workers));
    drop(server);
}

async fn verify(endpoint: &str, workers: &[Worker]) {
    let ch = channel(endpoint).await;
    let (mut leases, mut locks) = (LeaseClient::new(ch.clone()), LockClient::new(ch));
    let mut still_held = 0;
    for w in workers {
        for r in &w.names {
            let max_acked = r.acked.iter().copied().max().unwrap_or(0);
            let now = holder(&mut locks, &r.name).await;
            let now_token = now.as_ref().map(|h| h.token);
            match (r.held, r.release_in_flight) {
                (Some(t), None) => {
                    let h = now
                        .as_ref()
                        .unwrap_or_else(|| panic!("{}: acknowledged grant {t} lost", r.name));
                    assert_eq!(
                        (h.token, h.lease),
                        (t, w.lease),
                        "{}: holder changed",
                        r.name
                    );
                    still_held += 1;
                }
                (Some(t), Some(_)) => assert!(
                    now_token.is_none() || now_token == Some(t),
                    "{}: release of {t} in flight, now held with {now_token:?}",
                    r.name
                ),
                (None, _) if r.acquire_in_flight => assert!(
                    now_token.is_none_or(|n| n > max_acked),
                    "{}: in-flight grant has token {now_token:?} <= acknowledged {max_acked}",
                    r.name
                ),
                (None, _) => assert!(now.is_none(), "{}: released lock is held: {now:?}", r.name),
            }
        }
    }
    let in_flight = workers
        .iter()
        .flat_map(|w| &w.names)
        .filter(|r| r.acquire_in_flight || r.release_in_flight.is_some())
        .count();
    eprintln!(
        "checked: {still_held} acknowledged grants survived the crash; \
         {in_flight} operations were in flight at the kill"
    );

    eprintln!("phase: revoke the old leases; new grants get higher tokens");
    for w in workers {
        let revoke = RevokeRequest {
            lease: w.lease,
            request_id: format!("t60-revoke-{}", w.lease),
        };
        bounded(leases.revoke(revoke)).await.expect("revoke");
    }
    let grant = GrantRequest {
        ttl_ms: 10_000,
        ..Default::default()
    };
    let fresh = bounded(leases.grant(grant)).await.expect("grant").lease;
    for w in workers {
        for r in &w.names {
            let max_acked = r.acked.iter().copied().max().unwrap_or(0);
            let request = AcquireRequest {
                lease: fresh,
                name: r.name.clone(),
                request_id: format!("t60-after-{}", r.name),
                ..Default::default()
            };
            let token = bounded(locks.acquire(request))
                .await
                .expect("acquire after restart")
                .token;
            assert!(
                token > max_acked,
                "{}: token {token} after restart <= {max_acked}",
                r.name
            );
        }
    }
}
