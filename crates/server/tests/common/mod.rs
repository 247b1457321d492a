//! An in-process server on a free loopback port with a temporary data dir,
//! and gRPC clients to it.

#![allow(dead_code)]

use leasehold_proto::v1::lease_client::LeaseClient;
use leasehold_proto::v1::lock_client::LockClient;
use leasehold_proto::v1::{AcquireRequest, GrantRequest};
use leasehold_server::{serve_on, ServeConfig};
use std::time::Duration;
use tokio::sync::oneshot;
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

/// The `leasehold-reason` of a failed call.
pub fn reason(status: &tonic::Status) -> String {
    status
        .metadata()
        .get("leasehold-reason")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}
