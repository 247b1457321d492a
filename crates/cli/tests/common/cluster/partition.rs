//! The fault-injecting proxies of a partitionable [`Cluster`](super::Cluster):
//! one testkit [`Proxy`] per node, on `127.0.0.(20+i)`, forwarding byte for
//! byte to the node's listen address. Isolating node k cuts every
//! connection through k's proxy and, at every other proxy, those from k's
//! IP (the module doc of `cluster` says why that works at the connection
//! level).
//!
//! The proxies are async; the cluster tests are not, so the partition owns
//! a small runtime of its own for them.

use super::proxy_ip;
use leasehold_testkit::Proxy;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

/// Every node's proxy, and the runtime they run on.
pub(super) struct Partition {
    /// Node id → its proxy. Dropped (every connection closed) before the
    /// runtime shuts down.
    proxies: BTreeMap<u64, Proxy>,
    /// Runs the proxies' accept loops and copies; `None` once shut down.
    runtime: Option<tokio::runtime::Runtime>,
}

impl Partition {
    /// Starts a proxy in front of each node of `listens` (id → listen address).
    pub(super) fn start(listens: &BTreeMap<u64, SocketAddr>) -> Partition {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("the proxies' runtime");
        let proxies = runtime.block_on(async {
            let mut proxies = BTreeMap::new();
            for (&node, &target) in listens {
                proxies.insert(node, Proxy::start_on(proxy_ip(node), target).await);
            }
            proxies
        });
        Partition {
            proxies,
            runtime: Some(runtime),
        }
    }

    /// The proxy address node `id` is known by.
    pub(super) fn advertised(&self, id: u64) -> SocketAddr {
        self.proxies[&id].addr
    }

    /// Cuts node `node` (at `ip`) off: nothing reaches it through its proxy,
    /// and nothing from it passes any other proxy. Open connections that
    /// the isolation forbids are closed.
    pub(super) fn isolate(&self, node: u64, ip: IpAddr) {
        let cut: usize = (self.proxies.iter())
            .map(|(&id, proxy)| {
                if id == node {
                    proxy.cut()
                } else {
                    proxy.cut_from(ip)
                }
            })
            .sum();
        eprintln!("partition: node {node} ({ip}) isolated; {cut} open connections cut");
    }

    /// Lifts the isolation: new connections go through again.
    pub(super) fn heal(&self) {
        for proxy in self.proxies.values() {
            proxy.restore();
        }
        eprintln!("partition: healed");
    }
}

impl Drop for Partition {
    fn drop(&mut self) {
        self.proxies.clear();
        // Not a blocking shutdown: the cluster may be dropped inside
        // another runtime (a test's own), where blocking would panic.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
