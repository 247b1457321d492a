//! What the client's integration tests share: an in-process server on a
//! free loopback port with a temporary data dir ([`TestServer`]), a TCP
//! [`Proxy`] that can cut every connection (a partition, or a server going
//! away, without stopping the server), raw gRPC helpers to look at and
//! poke the server from outside the client, and bounded polling
//! ([`eventually`]) so no test sleeps "long enough".

#![allow(dead_code)]

use leasehold_client::{Client, ClientOptions};
use leasehold_proto::v1::lease_client::LeaseClient;
use leasehold_proto::v1::lock_client::LockClient;
use leasehold_proto::v1::{
    AcquireRequest, GetLeaseRequest, GetLockRequest, GrantRequest, LockInfo, RevokeRequest,
};
use leasehold_server::{serve_on, ServeConfig};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::{AbortHandle, JoinHandle};
use tokio::time::Instant;
use tonic::transport::Channel;

/// A running single-node server; stops when dropped.
pub struct TestServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// `http://{addr}`.
    pub endpoint: String,
    /// Its data dir, removed when the server is dropped.
    _dir: tempfile::TempDir,
    /// Ends `serve_on`'s shutdown future.
    stop: Option<oneshot::Sender<()>>,
    /// The serving task, aborted on drop in case shutdown waits on clients.
    task: JoinHandle<()>,
}

impl TestServer {
    /// Starts a node on a free port and waits (bounded) until it grants leases.
    pub async fn start() -> TestServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let config = ServeConfig::single_node(dir.path().to_path_buf(), addr);
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
            _dir: dir,
            stop: Some(stop),
            task,
        };
        server.await_ready().await;
        server
    }

    /// Polls (bounded) until a grant succeeds, then revokes the probe lease.
    async fn await_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(channel) = Channel::from_shared(self.endpoint.clone())
                .expect("endpoint")
                .connect()
                .await
            {
                let mut leases = LeaseClient::new(channel);
                let probe = GrantRequest {
                    ttl_ms: 1_000,
                    ..Default::default()
                };
                if let Ok(granted) = leases.grant(probe).await {
                    let lease = granted.into_inner().lease;
                    let _ = leases.revoke(revoke_request(lease)).await;
                    return;
                }
            }
            assert!(Instant::now() < deadline, "server did not become ready");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A client connected straight to the server (see [`client`]).
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
        self.leases()
            .await
            .revoke(revoke_request(lease))
            .await
            .expect("revoke");
    }

    /// The state of lock `name`, or `None` if nobody holds or waits for it.
    pub async fn lock_info(&self, name: &str) -> Option<LockInfo> {
        let found = self
            .locks()
            .await
            .get(GetLockRequest {
                name: name.into(),
                stale: false,
            })
            .await;
        match found {
            Ok(reply) => Some(reply.into_inner().lock.expect("lock info")),
            Err(status) if status.code() == tonic::Code::NotFound => None,
            Err(status) => panic!("get lock {name}: {status:?}"),
        }
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

    /// Acquires `name` for `lease` through the raw API, without waiting;
    /// returns the fencing token.
    pub async fn acquire_raw(&self, lease: u64, name: &str) -> u64 {
        let request = AcquireRequest {
            lease,
            name: name.into(),
            ..Default::default()
        };
        let reply = self.locks().await.acquire(request).await.expect("acquire");
        reply.into_inner().token
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.stop.take().map(|stop| stop.send(()));
        self.task.abort();
    }
}

fn revoke_request(lease: u64) -> RevokeRequest {
    RevokeRequest {
        lease,
        request_id: String::new(),
    }
}

/// A TCP proxy in front of a server. [`cut`](Self::cut) closes every
/// connection through it and closes new ones on arrival until
/// [`restore`](Self::restore): to the client it looks like the server went
/// away or a partition began, while the server itself runs on.
pub struct Proxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    /// State shared with the accept loop.
    shared: Arc<ProxyShared>,
    /// The accept loop, aborted on drop.
    accept: JoinHandle<()>,
}

struct ProxyShared {
    /// Where connections are forwarded.
    target: SocketAddr,
    /// Set while cut. Read and written under `connections`' lock, so a
    /// connection accepted concurrently with a cut is either aborted by it
    /// or refused, never missed.
    cut: AtomicBool,
    /// The forwarding tasks of live connections, for `cut` to abort.
    connections: Mutex<Vec<AbortHandle>>,
    /// Connections forwarded since the start.
    forwarded: AtomicU64,
    /// Connections closed on arrival because the proxy was cut.
    refused: AtomicU64,
}

impl Proxy {
    /// Starts a proxy to `target` on a free loopback port.
    pub async fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy addr");
        let shared = Arc::new(ProxyShared {
            target,
            cut: AtomicBool::new(false),
            connections: Mutex::new(Vec::new()),
            forwarded: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        });
        let accept = tokio::spawn(accept_loop(listener, shared.clone()));
        Proxy {
            addr,
            shared,
            accept,
        }
    }

    /// `http://{addr}`, for `Client::connect`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Closes every current connection and every new one until `restore`.
    pub fn cut(&self) {
        let mut connections = self.shared.connections.lock().expect("proxy lock");
        self.shared.cut.store(true, Ordering::SeqCst);
        for connection in connections.drain(..) {
            connection.abort();
        }
    }

    /// Forwards new connections again.
    pub fn restore(&self) {
        let _connections = self.shared.connections.lock().expect("proxy lock");
        self.shared.cut.store(false, Ordering::SeqCst);
    }

    /// Connections forwarded since the start.
    pub fn forwarded(&self) -> u64 {
        self.shared.forwarded.load(Ordering::SeqCst)
    }

    /// Connections closed on arrival while cut.
    pub fn refused(&self) -> u64 {
        self.shared.refused.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<ProxyShared>) {
    loop {
        let Ok((inbound, _)) = listener.accept().await else {
            // Out of file descriptors, say: try again rather than spin.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let mut connections = shared.connections.lock().expect("proxy lock");
        if shared.cut.load(Ordering::SeqCst) {
            shared.refused.fetch_add(1, Ordering::SeqCst);
            drop(inbound);
            continue;
        }
        shared.forwarded.fetch_add(1, Ordering::SeqCst);
        let task = tokio::spawn(forward(inbound, shared.target));
        connections.retain(|c| !c.is_finished());
        connections.push(task.abort_handle());
    }
}

/// Copies bytes both ways until either side closes (or the task is aborted,
/// which drops, and so closes, both sockets).
async fn forward(mut inbound: TcpStream, target: SocketAddr) {
    let Ok(mut outbound) = TcpStream::connect(target).await else {
        return;
    };
    let _ = inbound.set_nodelay(true);
    let _ = outbound.set_nodelay(true);
    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
}

/// A loopback address nothing listens on (bound, then released).
pub fn dead_addr() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr")
}

/// A client of `endpoints` with default options and a fixed jitter seed.
pub async fn client(endpoints: &[impl AsRef<str>]) -> Client {
    let options = ClientOptions {
        seed: Some(7),
        ..ClientOptions::default()
    };
    Client::connect_with(endpoints, options)
        .await
        .expect("client connects")
}

/// Polls `check` every 10 ms until it holds; panics naming `what` if it
/// does not within `timeout`. Returns how long it took.
pub async fn eventually<Fut>(
    what: &str,
    timeout: Duration,
    mut check: impl FnMut() -> Fut,
) -> Duration
where
    Fut: Future<Output = bool>,
{
    let started = Instant::now();
    eventually_some(what, timeout, || {
        let checked = check();
        async move { checked.await.then_some(()) }
    })
    .await;
    started.elapsed()
}

/// Polls `find` every 10 ms until it returns `Some`; panics naming `what`
/// if it does not within `timeout`.
pub async fn eventually_some<T, Fut>(
    what: &str,
    timeout: Duration,
    mut find: impl FnMut() -> Fut,
) -> T
where
    Fut: Future<Output = Option<T>>,
{
    let started = Instant::now();
    loop {
        if let Some(found) = find().await {
            return found;
        }
        assert!(
            started.elapsed() < timeout,
            "timed out after {timeout:?} waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Awaits `future`, panicking naming `what` if it takes longer than `bound`.
pub async fn within<T>(what: &str, bound: Duration, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(bound, future).await {
        Ok(value) => value,
        Err(_) => panic!("{what} did not happen within {bound:?}"),
    }
}
