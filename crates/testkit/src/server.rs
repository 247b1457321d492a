//! [`TestServer`]: a real single-node Leasehold server in the test's own
//! process (`leasehold_server::serve_on`), on a free loopback port with a
//! temporary data dir. In-process so a test starts one in milliseconds
//! and stops, restarts or drops it at will; real sockets and a real data
//! dir so what it tests is what ships.

use crate::grpc;
use crate::wait::eventually_some;
use leasehold_client::{Client, ClientOptions};
use leasehold_proto::v1::lease_client::LeaseClient;
use leasehold_proto::v1::lock_client::LockClient;
use leasehold_proto::v1::{GetLeaseRequest, GetLockRequest, GrantRequest, LockInfo};
use leasehold_server::{serve_on, ServeConfig};
use std::net::SocketAddr;
use std::time::Duration;
use tempfile::TempDir;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::transport::Channel;

/// Bound on a node's start-up, its one-member election included.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// A running single-node server; stops when dropped.
pub struct TestServer {
    /// Where it listens (gRPC and HTTP on one port).
    pub addr: SocketAddr,
    /// `http://{addr}`.
    pub endpoint: String,
    /// Its data dir, removed when the server is dropped (or handed to the
    /// next server by [`restart`](Self::restart)).
    dir: TempDir,
    /// Ends `serve_on`'s shutdown future.
    stop: Option<oneshot::Sender<()>>,
    /// The serving task: awaited by [`stop`](Self::stop), aborted on drop
    /// in case a graceful shutdown waits on clients the test still holds.
    task: Option<JoinHandle<()>>,
}

impl TestServer {
    /// Starts a node with the default config and a fresh data dir, and
    /// waits (bounded) until it grants leases.
    pub async fn start() -> TestServer {
        Self::start_with(tempfile::tempdir().expect("tempdir"), |_| {}).await
    }

    /// Starts a node on `dir` (which may hold an earlier node's state),
    /// with `tune` applied to the default config.
    pub async fn start_with(dir: TempDir, tune: impl FnOnce(&mut ServeConfig)) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
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
            addr,
            endpoint: format!("http://{addr}"),
            dir,
            stop: Some(stop),
            task: Some(task),
        };
        server.await_ready().await;
        server
    }

    /// Starts a node and opens a raw lease client and lock client to it.
    pub async fn start_with_clients() -> (TestServer, LeaseClient<Channel>, LockClient<Channel>) {
        let server = Self::start().await;
        let leases = server.leases().await;
        let locks = server.locks().await;
        (server, leases, locks)
    }

    /// Polls (bounded) until a grant succeeds, then revokes the probe
    /// lease so the test starts from an empty state.
    async fn await_ready(&self) {
        let lease = eventually_some("the server grants leases", START_TIMEOUT, async || {
            let channel = Channel::from_shared(self.endpoint.clone())
                .expect("endpoint")
                .connect()
                .await
                .ok()?;
            let mut leases = LeaseClient::new(channel);
            let probe = GrantRequest {
                ttl_ms: 1_000,
                ..Default::default()
            };
            let granted = leases.grant(probe).await.ok()?;
            Some((leases, granted.into_inner().lease))
        })
        .await;
        let (mut leases, probe) = lease;
        let _ = leases.revoke(grpc::revoke(probe)).await;
    }

    /// Stops the server and waits for it to finish.
    pub async fn stop(mut self) {
        self.halt().await;
    }

    /// Stops the server and starts a new one on the same data dir, with
    /// `tune` applied to the default config.
    pub async fn restart(mut self, tune: impl FnOnce(&mut ServeConfig)) -> TestServer {
        self.halt().await;
        let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().expect("tempdir"));
        TestServer::start_with(dir, tune).await
    }

    async fn halt(&mut self) {
        let _ = self.stop.take().map(|stop| stop.send(()));
        if let Some(task) = self.task.take() {
            task.await.expect("server task");
        }
    }

    /// A library client connected straight to the server (see [`client`]).
    pub async fn client(&self) -> Client {
        client(&[&self.endpoint]).await
    }

    /// A fresh channel straight to the server (not through any proxy).
    pub async fn channel(&self) -> Channel {
        Channel::from_shared(self.endpoint.clone())
            .expect("endpoint")
            .connect()
            .await
            .expect("connect to the test server")
    }

    /// A raw lease client straight to the server.
    pub async fn leases(&self) -> LeaseClient<Channel> {
        LeaseClient::new(self.channel().await)
    }

    /// A raw lock client straight to the server.
    pub async fn locks(&self) -> LockClient<Channel> {
        LockClient::new(self.channel().await)
    }

    /// Revokes `lease` from outside the client, as an operator would.
    pub async fn revoke(&self, lease: u64) {
        let mut leases = self.leases().await;
        leases.revoke(grpc::revoke(lease)).await.expect("revoke");
    }

    /// Acquires `name` for `lease` through the raw API, without waiting;
    /// returns the fencing token.
    pub async fn acquire_raw(&self, lease: u64, name: &str) -> u64 {
        grpc::acquire_now(&mut self.locks().await, lease, name).await
    }

    /// The state of lock `name`, or `None` if nobody holds or waits for it.
    pub async fn lock_info(&self, name: &str) -> Option<LockInfo> {
        let request = GetLockRequest {
            name: name.into(),
            stale: false,
        };
        match self.locks().await.get(request).await {
            Ok(reply) => Some(reply.into_inner().lock.expect("lock info")),
            Err(status) if status.code() == tonic::Code::NotFound => None,
            Err(status) => panic!("get lock {name}: {status:?}"),
        }
    }

    /// The state of lock `name`, which someone must hold or wait for.
    pub async fn lock(&self, name: &str) -> LockInfo {
        let info = self.lock_info(name).await;
        info.unwrap_or_else(|| panic!("lock {name} does not exist"))
    }

    /// Whether `lease` waits in the queue of `name`.
    pub async fn is_waiting(&self, name: &str, lease: u64) -> bool {
        let info = self.lock_info(name).await;
        info.is_some_and(|info| info.waiters.iter().any(|w| w.lease == lease))
    }

    /// `(lease, token)` of the holder of `name`, if it is held.
    pub async fn holder(&self, name: &str) -> Option<(u64, u64)> {
        let info = self.lock_info(name).await?;
        info.holder.map(|h| (h.lease, h.token))
    }

    /// Whether the server still knows `lease`.
    pub async fn lease_exists(&self, lease: u64) -> bool {
        let found = self.leases().await.get(GetLeaseRequest { lease }).await;
        match found {
            Ok(_) => true,
            Err(status) if status.code() == tonic::Code::NotFound => false,
            Err(status) => panic!("get lease {lease}: {status:?}"),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.stop.take().map(|stop| stop.send(()));
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// A library client of `endpoints` with default options and a fixed jitter
/// seed, so retry timings are the same on every run.
pub async fn client(endpoints: &[impl AsRef<str>]) -> Client {
    let options = ClientOptions {
        seed: Some(7),
        ..ClientOptions::default()
    };
    Client::connect_with(endpoints, options)
        .await
        .expect("client connects")
}
