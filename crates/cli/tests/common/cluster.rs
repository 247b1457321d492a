//! A cluster of real `leasehold serve` processes, for the cluster tests
//! (`t90_failover`, `t91_partition`, `t92_restart`, `t95_membership`).
//!
//! # Addressing
//!
//! Node `i` (ids start at 1, at most [`NODES_MAX`]) listens on its own
//! loopback IP, `127.0.0.(10+i)`, on a port found free by binding that IP.
//! Its outgoing Raft connections bind that IP too (the server binds its
//! listen IP), so whoever accepts a connection can tell which node made it.
//! The address a node is *known by* (in `--peers`, in membership, in
//! `NotLeader` hints) is its **advertised** address: the listen address
//! itself, or in a [partitionable](Cluster::start_partitionable) cluster a
//! proxy in this process on `127.0.0.(20+i)` that forwards to it.
//!
//! # Partitions
//!
//! Raft replies travel back on the caller's own connection, so the proxies
//! cut a node off by refusing connections, not packets:
//! [`isolate(k)`](Cluster::isolate) makes node k's proxy refuse (accept and
//! close) every connection, and every other proxy refuse connections whose
//! source IP is node k's; connections already open that match are shut
//! down. Nothing then reaches k through its advertised address and k reaches
//! nobody, in either direction. Clients of the test connect from 127.0.0.1,
//! so they still reach the majority, and reach k directly at its listen
//! address ([`cli_on`](Cluster::cli_on), [`endpoint`](Cluster::endpoint)).
//! [`heal`](Cluster::heal) lifts the rule.
//!
//! # Processes and failures
//!
//! Each node's stderr goes to a log file that survives restarts (appended,
//! with a marker line per start); if the test panics, dropping the cluster
//! prints the tail of every node's log. Dropping it kills every node.
//! Every wait polls a condition with a deadline and panics naming it.
//!
//! # API (kept stable: other test files build on it)
//!
//! - Start: [`Cluster::start`], [`Cluster::start_partitionable`],
//!   [`Cluster::start_first`], [`Cluster::add_joining_node`].
//! - Addresses: [`ids`](Cluster::ids), [`live_ids`](Cluster::live_ids),
//!   [`endpoint`](Cluster::endpoint), [`endpoints`](Cluster::endpoints),
//!   [`endpoint_list`](Cluster::endpoint_list), [`advertised`](Cluster::advertised).
//! - State: [`status`](Cluster::status), [`statuses`](Cluster::statuses),
//!   [`try_leader`](Cluster::try_leader), [`leader`](Cluster::leader),
//!   [`wait_leader`](Cluster::wait_leader), [`leader_after`](Cluster::leader_after).
//! - Faults: [`kill9`](Cluster::kill9), [`restart`](Cluster::restart),
//!   [`stop_all`](Cluster::stop_all), [`restart_all`](Cluster::restart_all),
//!   [`isolate`](Cluster::isolate), [`heal`](Cluster::heal); a node that
//!   lost its data or comes back as another ([`rebirth`]: `wipe`,
//!   `set_formation`, `start_refused`).
//! - CLI: [`cli`](Cluster::cli), [`ok_json`](Cluster::ok_json),
//!   [`spawn`](Cluster::spawn), [`command`](Cluster::command) (all live
//!   nodes as `--endpoints`); [`cli_on`](Cluster::cli_on),
//!   [`command_on`](Cluster::command_on) (one node);
//!   [`cli_via`](Cluster::cli_via), [`command_via`](Cluster::command_via)
//!   (the nodes given).
//! - Load: [`workload`] (library clients writing to fenced resources, and
//!   the checks that no two holders overlapped).

use super::{wait_for, START_TIMEOUT};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::process::Stdio;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

mod cli;
mod node;
mod partition;
mod rebirth;
mod tls;
pub mod workload;

use node::Node;
pub use node::{Formation, NodeStatus};
use partition::Partition;
use tls::ClusterTls;

/// Most nodes one cluster can have (node IPs 127.0.0.11..=19, proxies .21..=29).
pub const NODES_MAX: u64 = 9;

/// Bound on a majority agreeing on a leader (elections included).
pub const LEADER_TIMEOUT: Duration = Duration::from_secs(20);

/// Lines of each node's log printed when a test fails.
const LOG_TAIL_LINES: usize = 40;

/// Serialises the cluster tests of one test binary: each runs three servers
/// on two cores and several measure time, which parallel clusters would blur.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Takes the per-binary cluster-test lock (held until the guard drops).
pub fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The loopback IP node `id` listens on.
pub fn node_ip(id: u64) -> IpAddr {
    assert!((1..=NODES_MAX).contains(&id), "node id {id} out of range");
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, 10 + id as u8))
}

/// The loopback IP of node `id`'s proxy (partitionable clusters).
pub fn proxy_ip(id: u64) -> IpAddr {
    assert!((1..=NODES_MAX).contains(&id), "node id {id} out of range");
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, 20 + id as u8))
}

/// A free TCP port on `ip` (bound, read, released).
pub fn free_port_on(ip: IpAddr) -> u16 {
    let listener = TcpListener::bind((ip, 0)).unwrap_or_else(|e| panic!("bind {ip}:0: {e}"));
    listener.local_addr().expect("local addr").port()
}

/// Real `leasehold serve` processes forming one cluster (see the module doc).
pub struct Cluster {
    nodes: BTreeMap<u64, Node>,
    /// The fault-injecting proxies, in a partitionable cluster.
    partition: Option<Partition>,
    /// The certificates of an mTLS cluster ([`start_tls`](Self::start_tls)).
    tls: Option<ClusterTls>,
    /// Owns the data directories and logs.
    _dir: tempfile::TempDir,
}

impl Cluster {
    /// Starts `n` nodes that form one cluster, reaching each other directly,
    /// and waits until a majority agrees on a leader.
    pub fn start(n: u64) -> Cluster {
        Cluster::launch(n, false, n, false, &[])
    }

    /// Like [`start`](Self::start), with mTLS on every node's port and
    /// between peers (see [`tls`]); the cluster's commands present the CA
    /// and a client certificate.
    pub fn start_tls(n: u64) -> Cluster {
        Cluster::launch(n, false, n, true, &[])
    }

    /// Like [`start`](Self::start), but starts only nodes `1..=first` (a
    /// majority) and waits for their leader; start the others later with
    /// [`restart`](Self::restart), as an operator starting members one
    /// after another would.
    pub fn start_first(n: u64, first: u64) -> Cluster {
        assert!(first > n / 2 && first <= n, "a majority of {n} first");
        Cluster::launch(n, false, first, false, &[])
    }

    /// Like [`start`](Self::start), with every node known by a proxy
    /// address, so that [`isolate`](Self::isolate) can cut one off.
    pub fn start_partitionable(n: u64) -> Cluster {
        Cluster::launch(n, true, n, false, &[])
    }

    /// Like [`start`](Self::start), every node started with `serve_args`
    /// too (until [`set_serve_args`](Self::set_serve_args) changes them).
    pub fn start_with_args(n: u64, serve_args: &[&str]) -> Cluster {
        Cluster::launch(n, false, n, false, serve_args)
    }

    fn launch(
        n: u64,
        partitionable: bool,
        first: u64,
        with_tls: bool,
        serve_args: &[&str],
    ) -> Cluster {
        assert!((1..=NODES_MAX).contains(&n), "1..={NODES_MAX} nodes");
        let dir = tempfile::tempdir().expect("tempdir");
        let tls = with_tls.then(|| ClusterTls::new(dir.path()));
        let listens: BTreeMap<u64, SocketAddr> = (1..=n)
            .map(|id| (id, SocketAddr::new(node_ip(id), free_port_on(node_ip(id)))))
            .collect();
        let partition = partitionable.then(|| Partition::start(&listens));
        let advertised = |id: u64| match &partition {
            Some(partition) => partition.advertised(id).to_string(),
            None => listens[&id].to_string(),
        };
        let peers = (1..=n)
            .map(|id| format!("{id}={}", advertised(id)))
            .collect::<Vec<_>>()
            .join(",");
        let nodes = listens
            .iter()
            .map(|(&id, &listen)| {
                let node = Node {
                    id,
                    listen,
                    advertised: advertised(id),
                    data_dir: dir.path().join(format!("node-{id}")),
                    log: dir.path().join(format!("node-{id}.log")),
                    formation: Formation::Peers(peers.clone()),
                    child: None,
                    starts: 0,
                    tls_args: tls.as_ref().map(|tls| tls.serve_args(id, listen.ip())),
                    serve_args: serve_args.iter().map(|&arg| arg.to_owned()).collect(),
                };
                (id, node)
            })
            .collect();
        let mut cluster = Cluster {
            nodes,
            partition,
            tls,
            _dir: dir,
        };
        let started = Instant::now();
        cluster.start_together((1..=first).collect());
        let (leader, term) = cluster.leader();
        eprintln!(
            "cluster of {n} up after {:?}: leader {leader}, term {term}, peers {peers}",
            started.elapsed()
        );
        cluster
    }

    /// Starts one more node, with `--join` (it forms nothing and waits to
    /// be added: `leasehold member add ID ADDR` with [`advertised`](Self::advertised)).
    /// Waits until it answers `status`; returns its id.
    pub fn add_joining_node(&mut self) -> u64 {
        assert!(
            self.partition.is_none(),
            "joining nodes have no proxy; use an unpartitionable cluster"
        );
        let id = self.nodes.keys().max().map_or(1, |max| max + 1);
        let listen = SocketAddr::new(node_ip(id), free_port_on(node_ip(id)));
        let dir = self._dir.path();
        let mut node = Node {
            id,
            listen,
            advertised: listen.to_string(),
            data_dir: dir.join(format!("node-{id}")),
            log: dir.join(format!("node-{id}.log")),
            formation: Formation::Join,
            child: None,
            starts: 0,
            tls_args: self.tls.as_ref().map(|tls| tls.serve_args(id, listen.ip())),
            serve_args: Vec::new(),
        };
        node.spawn();
        self.nodes.insert(id, node);
        self.await_answering(id);
        id
    }

    /// Every node's id, live or not.
    pub fn ids(&self) -> Vec<u64> {
        self.nodes.keys().copied().collect()
    }

    /// The ids of the nodes whose process runs.
    pub fn live_ids(&self) -> Vec<u64> {
        let live = self.nodes.values().filter(|n| n.child.is_some());
        live.map(|n| n.id).collect()
    }

    fn node(&self, id: u64) -> &Node {
        self.nodes
            .get(&id)
            .unwrap_or_else(|| panic!("no node {id}"))
    }

    fn node_mut(&mut self, id: u64) -> &mut Node {
        self.nodes
            .get_mut(&id)
            .unwrap_or_else(|| panic!("no node {id}"))
    }

    /// Node `id`'s URL at its listen address (not through any proxy).
    pub fn endpoint(&self, id: u64) -> String {
        self.node(id).endpoint()
    }

    /// The address other nodes know node `id` by (`host:port`).
    pub fn advertised(&self, id: u64) -> String {
        self.node(id).advertised.clone()
    }

    /// The URLs of the live nodes.
    pub fn endpoint_list(&self) -> Vec<String> {
        self.live_ids()
            .iter()
            .map(|&id| self.endpoint(id))
            .collect()
    }

    /// The URLs of the live nodes, comma-joined (for `--endpoints`).
    pub fn endpoints(&self) -> String {
        self.endpoint_list().join(",")
    }

    /// Node `id`'s log so far (every start of it).
    pub fn log_text(&self, id: u64) -> String {
        std::fs::read_to_string(&self.node(id).log).unwrap_or_default()
    }

    // -- processes ---------------------------------------------------------

    /// Kills node `id` with SIGKILL (no shutdown path runs) and reaps it.
    pub fn kill9(&mut self, id: u64) {
        self.node_mut(id).kill9();
    }

    /// Starts node `id` again with its data dir, address and peers, and
    /// waits until it answers `status` (not for a leader).
    pub fn restart(&mut self, id: u64) {
        self.node_mut(id).spawn();
        self.await_answering(id);
    }

    /// Kills every node with SIGKILL.
    pub fn stop_all(&mut self) {
        for node in self.nodes.values_mut() {
            node.kill9();
        }
    }

    /// Starts every node that is not running, all at once, and waits until
    /// each answers `status` (call [`leader`](Self::leader) for a leader).
    pub fn restart_all(&mut self) {
        let stopped: Vec<u64> = self
            .nodes
            .values()
            .filter(|n| n.child.is_none())
            .map(|n| n.id)
            .collect();
        self.start_together(stopped);
    }

    /// Starts the nodes `ids` all at once and waits until each answers.
    fn start_together(&mut self, ids: Vec<u64>) {
        for &id in &ids {
            self.node_mut(id).spawn();
        }
        for id in ids {
            self.await_answering(id);
        }
    }

    fn await_answering(&mut self, id: u64) {
        let started = Instant::now();
        wait_for(
            &format!("node {id} to answer status"),
            START_TIMEOUT,
            || {
                self.node_mut(id).assert_running();
                self.status(id).map(|_| ())
            },
        );
        eprintln!("node {id} answering after {:?}", started.elapsed());
    }

    // -- cluster state -----------------------------------------------------

    /// Node `id`'s own answer to `status --json` (`None` if it does not
    /// answer within a second).
    pub fn status(&self, id: u64) -> Option<NodeStatus> {
        let out = self
            .command_on(id, &["--timeout", "1s", "status", "--json"])
            .stderr(Stdio::null())
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        NodeStatus::parse(serde_json::from_slice(&out.stdout).ok()?)
    }

    /// Every live node's status, asked concurrently; nodes that do not
    /// answer are missing.
    pub fn statuses(&self) -> BTreeMap<u64, NodeStatus> {
        std::thread::scope(|scope| {
            let asks: Vec<_> = self
                .live_ids()
                .into_iter()
                .map(|id| scope.spawn(move || (id, self.status(id))))
                .collect();
            asks.into_iter()
                .filter_map(|ask| {
                    let (id, status) = ask.join().expect("status thread");
                    Some((id, status?))
                })
                .collect()
        })
    }

    /// One round of [`statuses`](Self::statuses): the `(leader, term)` that
    /// a majority of the voters names, if the leader is live and itself
    /// reports leading at that term.
    pub fn try_leader(&self) -> Option<(u64, u64)> {
        agreed_leader(&self.statuses())
    }

    /// Polls until a majority agrees on a leader (see
    /// [`try_leader`](Self::try_leader)), within [`LEADER_TIMEOUT`].
    pub fn leader(&self) -> (u64, u64) {
        self.wait_leader(LEADER_TIMEOUT)
    }

    /// [`leader`](Self::leader) with its own bound.
    pub fn wait_leader(&self, limit: Duration) -> (u64, u64) {
        self.poll_leader(limit, 0)
    }

    /// Polls until a majority agrees on a leader at a term above `term`
    /// (a new election happened), within [`LEADER_TIMEOUT`].
    pub fn leader_after(&self, term: u64) -> (u64, u64) {
        self.poll_leader(LEADER_TIMEOUT, term)
    }

    /// Polls for an agreed leader at a term above `above`; on timeout the
    /// panic shows what every node last said.
    fn poll_leader(&self, limit: Duration, above: u64) -> (u64, u64) {
        let deadline = Instant::now() + limit;
        loop {
            let statuses = self.statuses();
            if let Some(agreed) = agreed_leader(&statuses).filter(|(_, term)| *term > above) {
                return agreed;
            }
            if Instant::now() >= deadline {
                let said: Vec<String> = statuses
                    .values()
                    .map(|s| {
                        format!(
                            "node {}: {} at term {}, leader {}",
                            s.node_id, s.state, s.term, s.leader
                        )
                    })
                    .collect();
                panic!(
                    "no majority agreed on a leader after term {above} within {limit:?}; \
                     last statuses: {said:?}"
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    // -- partitions --------------------------------------------------------

    /// Cuts node `id` off from every other node, in both directions (see
    /// the module doc). Panics unless the cluster is partitionable.
    pub fn isolate(&self, id: u64) {
        self.partition().isolate(id, node_ip(id));
    }

    /// Ends any isolation.
    pub fn heal(&self) {
        self.partition().heal();
    }

    fn partition(&self) -> &Partition {
        self.partition
            .as_ref()
            .expect("start the cluster with Cluster::start_partitionable")
    }
}

/// The `(leader, term)` a majority of the voters names in `statuses`, if
/// the leader itself reports leading at that term.
fn agreed_leader(statuses: &BTreeMap<u64, NodeStatus>) -> Option<(u64, u64)> {
    let mut named: BTreeMap<(u64, u64), usize> = BTreeMap::new();
    for status in statuses.values().filter(|s| s.leader != 0) {
        *named.entry((status.leader, status.term)).or_default() += 1;
    }
    named.into_iter().find_map(|((leader, term), count)| {
        let own = statuses.get(&leader)?;
        let voters = own.voters().max(1);
        let agreed = count > voters / 2 && own.state == "Leader" && own.term == term;
        agreed.then_some((leader, term))
    })
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let panicking = std::thread::panicking();
        for node in self.nodes.values_mut() {
            // A node that died on its own (a crash, a signal) says how.
            let exited = node
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            if let Some(status) = exited.filter(|_| panicking) {
                eprintln!("--- node {} had exited by itself: {status} ---", node.id);
            }
            node.kill9();
        }
        if !panicking {
            return;
        }
        for node in self.nodes.values() {
            let log = std::fs::read_to_string(&node.log).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            let tail = &lines[lines.len().saturating_sub(LOG_TAIL_LINES)..];
            eprintln!(
                "--- node {} log (last {} lines) ---",
                node.id, LOG_TAIL_LINES
            );
            for line in tail {
                eprintln!("{line}");
            }
        }
    }
}

/// A runtime for library clients a cluster test runs beside the cluster
/// (the test's own thread drives the cluster with the blocking helpers).
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}
