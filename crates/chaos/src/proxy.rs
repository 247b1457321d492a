//! [`Proxy`]: a TCP proxy in front of one node that injects network
//! faults, so the harness (and `leasehold drill`) can stage partitions,
//! one-way links, delay and loss between real processes on loopback.
//!
//! It works on connections, since that is what gRPC and Raft ride on, and
//! applies a [`LinkFault`] per caller IP (every node dials from its own
//! loopback IP, so "from node k" is a source IP) or to every caller:
//!
//! - **stall** one direction (`stall_up`: caller → target, `stall_down`:
//!   target → caller): bytes in flight are held, not forwarded, and TCP's
//!   back-pressure stops the sender, as lost packets would. Nothing is
//!   closed, so nothing fails fast: the sides time out as they would across
//!   a real partition, and the held bytes flow when the stall is lifted.
//!   Stalling both directions is a partition; one of them, a one-way link.
//! - **reset**: open connections are closed and new ones closed on arrival
//!   (a host that refuses: fails fast).
//! - **delay**: each chunk waits `delay_ms` before it is forwarded.
//! - **loss**: each chunk closes its connection with probability
//!   `reset_per_mille`/1000 (TCP has no lost bytes, only lost connections).

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinHandle};

/// Bound on the proxy's connection to its target.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// Bytes read at once from one side.
const CHUNK_BYTES: usize = 16 * 1024;

/// What happens to the traffic of one caller (or of every caller).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkFault {
    /// Close open connections and refuse new ones.
    pub reset: bool,
    /// Hold the bytes the caller sends.
    pub stall_up: bool,
    /// Hold the bytes the target sends back.
    pub stall_down: bool,
    /// Wait this long before forwarding each chunk, either way.
    pub delay_ms: u64,
    /// Close the connection at a chunk with this chance in 1000.
    pub reset_per_mille: u16,
}

impl LinkFault {
    /// Both directions held: a partition.
    pub const PARTITION: LinkFault = LinkFault {
        reset: false,
        stall_up: true,
        stall_down: true,
        delay_ms: 0,
        reset_per_mille: 0,
    };

    /// Connections refused and closed: a host that is gone, fast.
    pub const RESET: LinkFault = LinkFault {
        reset: true,
        stall_up: false,
        stall_down: false,
        delay_ms: 0,
        reset_per_mille: 0,
    };

    fn stalls(self, up: bool) -> bool {
        if up {
            self.stall_up
        } else {
            self.stall_down
        }
    }
}

/// A TCP proxy to one target; stops (closing every connection) when dropped.
pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

/// The faults in force: one for every caller, overridden per caller IP.
#[derive(Clone, Debug, Default)]
struct Rules {
    everyone: LinkFault,
    by_source: HashMap<IpAddr, LinkFault>,
}

impl Rules {
    fn for_source(&self, source: IpAddr) -> LinkFault {
        self.by_source
            .get(&source)
            .copied()
            .unwrap_or(self.everyone)
    }
}

/// What the proxy, its accept loop and its connections share.
struct Shared {
    target: SocketAddr,
    /// The rules; every change is published so stalled copies look again.
    rules: watch::Sender<Rules>,
    /// Open connections (caller IP, forwarding task), for a reset to abort.
    open: Mutex<Vec<(IpAddr, AbortHandle)>>,
    forwarded: AtomicU64,
    /// State of the loss dice (xorshift).
    dice: AtomicU64,
}

impl Proxy {
    /// Starts a proxy to `target` on a free port of `ip`.
    pub async fn start(ip: IpAddr, target: SocketAddr) -> io::Result<Proxy> {
        let listener = TcpListener::bind((ip, 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            target,
            rules: watch::Sender::new(Rules::default()),
            open: Mutex::new(Vec::new()),
            forwarded: AtomicU64::new(0),
            dice: AtomicU64::new(0x9E37_79B9_7F4A_7C15 ^ u64::from(addr.port())),
        });
        let accept = tokio::spawn(accept_loop(listener, shared.clone()));
        Ok(Proxy {
            addr,
            shared,
            accept,
        })
    }

    /// Where callers connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://{addr}`, for a client's endpoint list.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Applies `fault` to every caller without a rule of its own.
    pub fn set_everyone(&self, fault: LinkFault) {
        self.shared
            .rules
            .send_modify(|rules| rules.everyone = fault);
        self.shared.reset_matching();
    }

    /// Applies `fault` to the callers from `source`.
    pub fn set_from(&self, source: IpAddr, fault: LinkFault) {
        self.shared
            .rules
            .send_modify(|rules| _ = rules.by_source.insert(source, fault));
        self.shared.reset_matching();
    }

    /// Lifts every fault: held bytes flow, new connections are forwarded.
    pub fn heal(&self) {
        self.shared.rules.send_replace(Rules::default());
    }

    /// Closes every connection now and refuses new ones until [`heal`](Self::heal).
    pub fn cut(&self) {
        self.set_everyone(LinkFault::RESET);
    }

    /// Connections forwarded since the start.
    pub fn forwarded(&self) -> u64 {
        self.shared.forwarded.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        for (_, task) in self.shared.open().drain(..) {
            task.abort();
        }
    }
}

impl Shared {
    fn open(&self) -> MutexGuard<'_, Vec<(IpAddr, AbortHandle)>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn fault_for(&self, source: IpAddr) -> LinkFault {
        self.rules.borrow().for_source(source)
    }

    /// Aborts the open connections whose caller is now to be reset.
    fn reset_matching(&self) {
        let rules = self.rules.borrow().clone();
        self.open().retain(|(source, task)| {
            let reset = rules.for_source(*source).reset;
            if reset {
                task.abort();
            }
            !reset && !task.is_finished()
        });
    }

    /// `true` with chance `per_mille`/1000.
    fn roll(&self, per_mille: u16) -> bool {
        if per_mille == 0 {
            return false;
        }
        let mut x = self.dice.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.dice.store(x, Ordering::Relaxed);
        x % 1000 < u64::from(per_mille)
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((inbound, caller)) = listener.accept().await else {
            // Out of file descriptors, say: try again rather than spin.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let source = caller.ip();
        if shared.fault_for(source).reset {
            continue; // dropped: closed on arrival
        }
        shared.forwarded.fetch_add(1, Ordering::SeqCst);
        let task = tokio::spawn(forward(inbound, source, shared.clone()));
        let mut open = shared.open();
        open.retain(|(_, task)| !task.is_finished());
        open.push((source, task.abort_handle()));
    }
}

/// Forwards both ways under the rules until either side closes.
async fn forward(inbound: TcpStream, source: IpAddr, shared: Arc<Shared>) {
    let connect = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(shared.target)).await;
    let Ok(Ok(outbound)) = connect else {
        return;
    };
    let _ = inbound.set_nodelay(true);
    let _ = outbound.set_nodelay(true);
    let (caller_read, caller_write) = inbound.into_split();
    let (target_read, target_write) = outbound.into_split();
    tokio::select! {
        () = copy(caller_read, target_write, source, true, &shared) => {}
        () = copy(target_read, caller_write, source, false, &shared) => {}
    }
}

/// Copies one direction (`up`: caller → target), holding, delaying or
/// dropping chunks as the rules say at the moment each is forwarded.
async fn copy(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    source: IpAddr,
    up: bool,
    shared: &Shared,
) {
    let mut rules = shared.rules.subscribe();
    let mut buf = vec![0u8; CHUNK_BYTES];
    loop {
        let Ok(n) = from.read(&mut buf).await else {
            return;
        };
        if n == 0 {
            return;
        }
        let fault = loop {
            let fault = rules.borrow_and_update().for_source(source);
            if !fault.stalls(up) {
                break fault;
            }
            if rules.changed().await.is_err() {
                return;
            }
        };
        if fault.reset || shared.roll(fault.reset_per_mille) {
            return;
        }
        if fault.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(fault.delay_ms)).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

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

    /// Sends a byte and reads it back within `limit`; `false` if it did not come.
    async fn round_trip(stream: &mut TcpStream, limit: Duration) -> bool {
        let mut byte = [0u8];
        let trip = async {
            stream.write_all(b"x").await.is_ok() && matches!(stream.read(&mut byte).await, Ok(1))
        };
        tokio::time::timeout(limit, trip).await.unwrap_or(false)
    }

    const QUICK: Duration = Duration::from_secs(2);
    const HELD: Duration = Duration::from_millis(200);

    #[tokio::test]
    async fn a_stall_holds_bytes_until_healed_and_a_reset_closes() {
        let proxy = Proxy::start(Ipv4Addr::LOCALHOST.into(), echo().await)
            .await
            .unwrap();
        let mut open = TcpStream::connect(proxy.addr()).await.unwrap();
        assert!(round_trip(&mut open, QUICK).await);

        // A rule for another source leaves 127.0.0.1 alone.
        proxy.set_from("127.0.0.2".parse().unwrap(), LinkFault::PARTITION);
        assert!(round_trip(&mut open, QUICK).await);

        // One way held: the byte goes out, its echo does not come back...
        proxy.set_everyone(LinkFault {
            stall_down: true,
            ..LinkFault::default()
        });
        assert!(!round_trip(&mut open, HELD).await);
        // ...until healed: then the held echo arrives, on the same connection.
        proxy.heal();
        let mut byte = [0u8];
        let late = tokio::time::timeout(QUICK, open.read(&mut byte)).await;
        assert!(matches!(late, Ok(Ok(1))), "the held byte arrives: {late:?}");

        proxy.cut();
        assert!(!round_trip(&mut open, QUICK).await);
        let mut refused = TcpStream::connect(proxy.addr()).await.unwrap();
        assert!(!round_trip(&mut refused, QUICK).await);
        proxy.heal();
        let mut again = TcpStream::connect(proxy.addr()).await.unwrap();
        assert!(round_trip(&mut again, QUICK).await);
    }

    #[tokio::test]
    async fn a_delay_slows_each_chunk() {
        let proxy = Proxy::start(Ipv4Addr::LOCALHOST.into(), echo().await)
            .await
            .unwrap();
        proxy.set_everyone(LinkFault {
            delay_ms: 100,
            ..LinkFault::default()
        });
        let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
        let started = std::time::Instant::now();
        assert!(round_trip(&mut stream, QUICK).await);
        // Two chunks (there and back), each held 100 ms.
        assert!(started.elapsed() >= Duration::from_millis(200));
    }
}
