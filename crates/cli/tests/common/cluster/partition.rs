//! The fault-injecting proxies of a partitionable [`Cluster`](super::Cluster):
//! one per node, on `127.0.0.(20+i)`, forwarding byte for byte to the
//! node's listen address, and refusing connections by the isolation rule
//! (the module doc of `cluster` says why it works at the connection level).
//!
//! Plain threads: one acceptor per proxy, two copiers per connection.

use super::proxy_ip;
use std::collections::BTreeMap;
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Bound on the proxy's connection to its node.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// Which node is cut off.
#[derive(Clone, Copy, Debug)]
struct Isolation {
    node: u64,
    ip: IpAddr,
}

impl Isolation {
    /// Whether a connection from `source` to the proxy of `target` is cut.
    fn cuts(&self, target: u64, source: IpAddr) -> bool {
        self.node == target || self.ip == source
    }
}

/// One forwarded connection, kept so that an isolation can cut it.
struct Piped {
    id: u64,
    source: IpAddr,
    /// The accepted side (the caller).
    outer: TcpStream,
    /// The side connected to the node.
    inner: TcpStream,
}

impl Piped {
    fn cut(&self) {
        let _ = self.outer.shutdown(Shutdown::Both);
        let _ = self.inner.shutdown(Shutdown::Both);
    }
}

/// What a proxy's threads share.
struct Shared {
    /// The node this proxy fronts.
    node: u64,
    /// The node's listen address.
    target: SocketAddr,
    /// The cluster-wide rule (one for every proxy).
    rule: Arc<Mutex<Option<Isolation>>>,
    /// Open connections. The acceptor checks the rule and registers a
    /// connection under this lock, and `isolate` sweeps under it after
    /// setting the rule, so no connection slips between the two.
    open: Mutex<Vec<Piped>>,
    next_id: AtomicU64,
    stop: AtomicBool,
}

impl Shared {
    fn cut(&self, rule: Option<Isolation>, source: IpAddr) -> bool {
        rule.is_some_and(|rule| rule.cuts(self.node, source))
    }

    fn forget(&self, id: u64) {
        let mut open = self.open.lock().expect("proxy connections");
        if let Some(at) = open.iter().position(|p| p.id == id) {
            open.swap_remove(at).cut();
        }
    }
}

/// One node's proxy.
struct Proxy {
    listen: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

/// Every node's proxy and the rule they share.
pub(super) struct Partition {
    rule: Arc<Mutex<Option<Isolation>>>,
    proxies: BTreeMap<u64, Proxy>,
}

impl Partition {
    /// Starts a proxy in front of each node of `listens` (id → listen address).
    pub(super) fn start(listens: &BTreeMap<u64, SocketAddr>) -> Partition {
        let rule = Arc::new(Mutex::new(None));
        let proxies = listens
            .iter()
            .map(|(&node, &target)| (node, Proxy::start(node, target, rule.clone())))
            .collect();
        Partition { rule, proxies }
    }

    /// The proxy address node `id` is known by.
    pub(super) fn advertised(&self, id: u64) -> SocketAddr {
        self.proxies[&id].listen
    }

    /// Cuts node `node` (at `ip`) off, and every open connection that the
    /// rule now forbids.
    pub(super) fn isolate(&self, node: u64, ip: IpAddr) {
        let isolation = Isolation { node, ip };
        *self.rule.lock().expect("partition rule") = Some(isolation);
        let mut cut = 0;
        for proxy in self.proxies.values() {
            let open = proxy.shared.open.lock().expect("proxy connections");
            for piped in open
                .iter()
                .filter(|p| isolation.cuts(node_of(proxy), p.source))
            {
                piped.cut();
                cut += 1;
            }
        }
        eprintln!("partition: node {node} ({ip}) isolated; {cut} open connections cut");
    }

    /// Lifts the isolation: new connections go through again.
    pub(super) fn heal(&self) {
        *self.rule.lock().expect("partition rule") = None;
        eprintln!("partition: healed");
    }
}

fn node_of(proxy: &Proxy) -> u64 {
    proxy.shared.node
}

impl Drop for Partition {
    fn drop(&mut self) {
        for proxy in self.proxies.values_mut() {
            proxy.stop();
        }
    }
}

impl Proxy {
    fn start(node: u64, target: SocketAddr, rule: Arc<Mutex<Option<Isolation>>>) -> Proxy {
        let ip = proxy_ip(node);
        let listener = TcpListener::bind((ip, 0)).unwrap_or_else(|e| panic!("bind {ip}:0: {e}"));
        let listen = listener.local_addr().expect("proxy address");
        let shared = Arc::new(Shared {
            node,
            target,
            rule,
            open: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let acceptor = {
            let shared = shared.clone();
            std::thread::spawn(move || accept_loop(&listener, &shared))
        };
        Proxy {
            listen,
            shared,
            acceptor: Some(acceptor),
        }
    }

    fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        // Wake the acceptor.
        let _ = TcpStream::connect_timeout(&self.listen, CONNECT_TIMEOUT);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        for piped in self
            .shared
            .open
            .lock()
            .expect("proxy connections")
            .drain(..)
        {
            piped.cut();
        }
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    for accepted in listener.incoming() {
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        let Ok(outer) = accepted else { continue };
        let Ok(source) = outer.peer_addr().map(|a| a.ip()) else {
            continue;
        };
        // Refuse at once (close) rather than after connecting onwards.
        if shared.cut(*shared.rule.lock().expect("partition rule"), source) {
            continue;
        }
        let Ok(inner) = TcpStream::connect_timeout(&shared.target, CONNECT_TIMEOUT) else {
            continue;
        };
        let _ = inner.set_nodelay(true);
        let _ = outer.set_nodelay(true);
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        let clones = (outer.try_clone(), inner.try_clone());
        let (Ok(outer_read), Ok(inner_read)) = clones else {
            continue;
        };
        {
            let mut open = shared.open.lock().expect("proxy connections");
            if shared.cut(*shared.rule.lock().expect("partition rule"), source) {
                continue;
            }
            open.push(Piped {
                id,
                source,
                outer,
                inner,
            });
        }
        let (to_node, to_caller) = match (outer_read.try_clone(), inner_read.try_clone()) {
            (Ok(outer_write), Ok(inner_write)) => {
                ((outer_read, inner_write), (inner_read, outer_write))
            }
            _ => {
                shared.forget(id);
                continue;
            }
        };
        for (from, to) in [to_node, to_caller] {
            let shared = shared.clone();
            std::thread::spawn(move || {
                copy(from, to);
                // One direction ended: end the connection both ways.
                shared.forget(id);
            });
        }
    }
}

/// Copies until end of stream or an error (a cut connection ends here).
fn copy(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::io::copy(&mut from, &mut to);
}
