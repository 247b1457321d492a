//! An in-process server on a free loopback port with a temporary data dir,
//! and gRPC clients to it.

#![allow(dead_code)]

use leasehold_proto::v1::lease_client::LeaseClient;
use leasehold_proto::v1::lock_client::LockClient;
use leasehold_proto::v1::{AcquireRequest, GetLockRequest, GrantRequest, LockInfo, ReleaseRequest};
use leasehold_server::{serve_on, ServeConfig};
use std::future::Future;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tonic::transport::Channel;

/// A running server; stops when dropped.
pub struct TestServer {
    pub endpoint: String,
    pub dir: tempfile::TempDir,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl TestServer {
    /// Starts a node and waits (bounded) until it answers as leader.
    pub async fn start() -> TestServer {
        Self::start_with(tempfile::tempdir().expect("tempdir"), |_| {}).await
    }

    /// Starts a node and opens a lease client and a lock client to it.
    pub async fn start_with_clients() -> (TestServer, LeaseClient<Channel>, LockClient<Channel>) {
        let server = Self::start().await;
        let leases = server.leases().await;
        let locks = server.locks().await;
        (server, leases, locks)
    }

    /// Starts a node on `dir`, with `tune` applied to the default config.
    pub async fn start_with(
        dir: tempfile::TempDir,
        tune: impl FnOnce(&mut ServeConfig),
    ) -> TestServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let mut config = ServeConfig::single_node(dir.path().to_path_buf(), addr);
        tune(&mut config);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            serve_on(config, listener, async move {
                let _ = stopped.await;
            })
            .await
            .expect("server failed");
        });
        let server = TestServer {
            endpoint: format!("http://{addr}"),
            dir,
            stop: Some(stop),
            task: Some(task),
        };
        server.await_leader().await;
        server
    }

    async fn await_leader(&self) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let mut leases = self.leases().await;
            let granted = leases
                .grant(GrantRequest {
                    ttl_ms: 1_000,
                    ..Default::default()
                })
                .await;
            if granted.is_ok() {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "server not ready: {granted:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub async fn channel(&self) -> Channel {
        Channel::from_shared(self.endpoint.clone())
            .expect("endpoint")
            .connect()
            .await
            .expect("connect")
    }

    pub async fn leases(&self) -> LeaseClient<Channel> {
        LeaseClient::new(self.channel().await)
    }

    pub async fn locks(&self) -> LockClient<Channel> {
        LockClient::new(self.channel().await)
    }

    /// Stops the server and waits for it to finish.
    pub async fn stop(mut self) {
        self.halt().await;
    }

    async fn halt(&mut self) {
        let _ = self.stop.take().map(|stop| stop.send(()));
        if let Some(task) = self.task.take() {
            task.await.expect("server task");
        }
    }

    /// Stops the server and starts a new one on the same data dir.
    pub async fn restart(mut self, tune: impl FnOnce(&mut ServeConfig)) -> TestServer {
        self.halt().await;
        let dir = tempfile::tempdir().expect("tempdir");
        let dir = std::mem::replace(&mut self.dir, dir);
        TestServer::start_with(dir, tune).await
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.stop.take().map(|stop| stop.send(()));
    }
}

/// Grants a lease with `ttl_ms`.
pub async fn grant(leases: &mut LeaseClient<Channel>, ttl_ms: u64) -> u64 {
    leases
        .grant(GrantRequest {
            ttl_ms,
            ..Default::default()
        })
        .await
        .expect("grant")
        .into_inner()
        .lease
}

/// An acquire request.
pub fn acquire(lease: u64, name: &str, wait_ms: u64) -> AcquireRequest {
    AcquireRequest {
        lease,
        name: name.into(),
        wait_ms,
        ..Default::default()
    }
}

/// A release request.
pub fn release(lease: u64, name: &str, token: u64) -> ReleaseRequest {
    ReleaseRequest {
        lease,
        name: name.into(),
        token,
        request_id: String::new(),
    }
}

/// Acquires `name` for `lease` without waiting; returns its token.
pub async fn acquire_now(locks: &mut LockClient<Channel>, lease: u64, name: &str) -> u64 {
    locks
        .acquire(acquire(lease, name, 0))
        .await
        .expect("acquire")
        .into_inner()
        .token
}

/// The state of lock `name`, read on a fresh connection.
pub async fn lock_info(server: &TestServer, name: &str) -> LockInfo {
    lock_info_opt(server, name).await.expect("the lock exists")
}

/// The state of lock `name`, or `None` if nobody holds or waits for it.
pub async fn lock_info_opt(server: &TestServer, name: &str) -> Option<LockInfo> {
    let found = server
        .locks()
        .await
        .get(GetLockRequest {
            name: name.into(),
            stale: false,
        })
        .await;
    match found {
        Ok(reply) => Some(reply.into_inner().lock.expect("lock info")),
        Err(status) if reason(&status) == "NoSuchLock" => None,
        Err(status) => panic!("get lock {name}: {status:?}"),
    }
}

/// Polls `check` every 10 ms until it holds; panics naming `what` if it
/// does not within `timeout`.
pub async fn eventually<Fut>(what: &str, timeout: Duration, check: impl FnMut() -> Fut)
where
    Fut: Future<Output = bool>,
{
    eventually_by(what, Instant::now() + timeout, check).await
}

/// As [`eventually`], against a `deadline` that several waits can share.
pub async fn eventually_by<Fut>(what: &str, deadline: Instant, mut check: impl FnMut() -> Fut)
where
    Fut: Future<Output = bool>,
{
    loop {
        if check().await {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The `leasehold-reason` of a failed call.
pub fn reason(status: &tonic::Status) -> String {
    status
        .metadata()
        .get("leasehold-reason")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}
