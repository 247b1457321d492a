//! [`Proxy`]: a TCP proxy in front of a server that can cut connections,
//! so a test can make the server "go away" or stage a network partition
//! while the server itself runs on.
//!
//! It works at the connection level, not the packet level: gRPC and Raft
//! replies travel back on the caller's own connection, so refusing new
//! connections and closing open ones is what separates two sides. A cut
//! closes the matching open connections and refuses (accepts and closes)
//! matching new ones until [`restore`](Proxy::restore). What matches is
//! every connection ([`cut`](Proxy::cut)) or those from one source IP
//! ([`cut_from`](Proxy::cut_from)); the cluster tests give each node its
//! own loopback IP, so "from node k" is a source IP.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{AbortHandle, JoinHandle};

/// Bound on the proxy's connection to its target.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// A TCP proxy to one target; stops (closing every connection) when dropped.
pub struct Proxy {
    /// Where callers connect.
    pub addr: SocketAddr,
    /// State shared with the accept loop.
    shared: Arc<Shared>,
    /// The accept loop, aborted on drop.
    accept: JoinHandle<()>,
}

/// What the proxy and its accept loop share.
struct Shared {
    /// Where connections are forwarded.
    target: SocketAddr,
    /// Which connections are refused, and the open ones. One lock, so a
    /// connection accepted concurrently with a cut is either aborted by
    /// the cut or refused by the new rule, never missed.
    gate: Mutex<Gate>,
    /// Connections forwarded since the start.
    forwarded: AtomicU64,
    /// Connections closed on arrival because a cut matched them.
    refused: AtomicU64,
}

/// The rule and the connections it applies to.
struct Gate {
    /// Which sources are cut off now.
    refusing: Refusing,
    /// The forwarding tasks of open connections, for a cut to abort.
    open: Vec<Open>,
}

/// Which connections a cut matches.
#[derive(Clone, Copy, Debug)]
enum Refusing {
    Nobody,
    Everyone,
    From(IpAddr),
}

impl Refusing {
    fn refuses(self, source: IpAddr) -> bool {
        match self {
            Refusing::Nobody => false,
            Refusing::Everyone => true,
            Refusing::From(ip) => ip == source,
        }
    }
}

/// One forwarded connection.
struct Open {
    /// The caller's IP.
    source: IpAddr,
    /// Its forwarding task; aborting it drops, and so closes, both sockets.
    task: AbortHandle,
}

impl Proxy {
    /// Starts a proxy to `target` on a free port of 127.0.0.1.
    pub async fn start(target: SocketAddr) -> Proxy {
        Proxy::start_on(Ipv4Addr::LOCALHOST.into(), target).await
    }

    /// Starts a proxy to `target` on a free port of `ip`.
    pub async fn start_on(ip: IpAddr, target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind((ip, 0))
            .await
            .unwrap_or_else(|e| panic!("bind a proxy on {ip}:0: {e}"));
        let addr = listener.local_addr().expect("proxy addr");
        let shared = Arc::new(Shared {
            target,
            gate: Mutex::new(Gate {
                refusing: Refusing::Nobody,
                open: Vec::new(),
            }),
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

    /// `http://{addr}`, for a client's endpoint list.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Closes every open connection and every new one until
    /// [`restore`](Self::restore). Returns how many open ones it closed.
    pub fn cut(&self) -> usize {
        self.shared.cut(Refusing::Everyone)
    }

    /// Closes the open connections from `source` and refuses new ones from
    /// it until [`restore`](Self::restore); others pass. Replaces an
    /// earlier cut. Returns how many open ones it closed.
    pub fn cut_from(&self, source: IpAddr) -> usize {
        self.shared.cut(Refusing::From(source))
    }

    /// Forwards every new connection again.
    pub fn restore(&self) {
        self.shared.gate().refusing = Refusing::Nobody;
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

impl Shared {
    /// The gate, even if a panicking test thread poisoned it (it holds no
    /// invariant a panic can break half-way).
    fn gate(&self) -> MutexGuard<'_, Gate> {
        self.gate.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets `refusing` and aborts the open connections it matches.
    fn cut(&self, refusing: Refusing) -> usize {
        let mut gate = self.gate();
        gate.refusing = refusing;
        let before = gate.open.len();
        gate.open.retain(|open| {
            let cut = refusing.refuses(open.source);
            if cut {
                open.task.abort();
            }
            !cut && !open.task.is_finished()
        });
        before - gate.open.len()
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((inbound, source)) = listener.accept().await else {
            // Out of file descriptors, say: try again rather than spin.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let mut gate = shared.gate();
        if gate.refusing.refuses(source.ip()) {
            shared.refused.fetch_add(1, Ordering::SeqCst);
            drop(inbound);
            continue;
        }
        shared.forwarded.fetch_add(1, Ordering::SeqCst);
        let task = tokio::spawn(forward(inbound, shared.target));
        gate.open.retain(|open| !open.task.is_finished());
        gate.open.push(Open {
            source: source.ip(),
            task: task.abort_handle(),
        });
    }
}

/// Copies bytes both ways until both sides close (or the task is aborted,
/// which drops, and so closes, both sockets).
async fn forward(mut inbound: TcpStream, target: SocketAddr) {
    let connect = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(target)).await;
    let Ok(Ok(mut outbound)) = connect else {
        return;
    };
    let _ = inbound.set_nodelay(true);
    let _ = outbound.set_nodelay(true);
    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// An echo server on a free port.
    async fn echo() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let (mut read, mut write) = stream.split();
                    let _ = tokio::io::copy(&mut read, &mut write).await;
                });
            }
        });
        addr
    }

    /// Sends a byte and reads it back; `false` if the connection is gone.
    async fn round_trip(stream: &mut TcpStream) -> bool {
        let mut byte = [0u8];
        stream.write_all(b"x").await.is_ok() && matches!(stream.read(&mut byte).await, Ok(1))
    }

    #[tokio::test]
    async fn cuts_open_and_new_connections_until_restored() {
        let proxy = Proxy::start(echo().await).await;
        let mut open = TcpStream::connect(proxy.addr).await.unwrap();
        assert!(round_trip(&mut open).await);

        // A cut from another source leaves 127.0.0.1 alone.
        assert_eq!(proxy.cut_from("127.0.0.2".parse().unwrap()), 0);
        assert!(round_trip(&mut open).await);

        assert_eq!(proxy.cut(), 1);
        assert!(!round_trip(&mut open).await);
        let mut refused = TcpStream::connect(proxy.addr).await.unwrap();
        assert!(!round_trip(&mut refused).await);
        assert_eq!(proxy.refused(), 1);

        proxy.restore();
        let mut again = TcpStream::connect(proxy.addr).await.unwrap();
        assert!(round_trip(&mut again).await);
        assert_eq!(proxy.forwarded(), 2);
    }
}
