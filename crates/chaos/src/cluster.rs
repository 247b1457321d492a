//! [`Cluster`]: real `leasehold serve` processes on loopback, each behind
//! a fault-injecting [`Proxy`], for the harness and for `leasehold drill
//! --local`.
//!
//! # Addressing
//!
//! Node `i` (ids from 1 to [`NODES_MAX`]) listens on its own loopback IP,
//! `127.0.0.(40+i)`, and dials its peers from it (the server binds its
//! listen IP), so a proxy can tell which node a connection comes from. It
//! is *known* (in `--peers`, membership, leader hints) by its proxy on
//! `127.0.0.(60+i)`, so every byte to a node passes its proxy: Raft from
//! the other nodes (source `127.0.0.(40+k)`) and clients (source
//! `127.0.0.1`, which node-to-node partitions leave alone).
//!
//! # Processes
//!
//! Each node's stderr is appended to `node-<id>.log` in the cluster's
//! directory, with a marker line per start. [`kill9`](Cluster::kill9),
//! [`pause`](Cluster::pause) (SIGSTOP) and [`restart`](Cluster::restart)
//! act on one node; dropping the cluster kills every node. Every wait is
//! bounded and says what it waited for when it gives up.

mod disk;
mod leader;
mod membership;

use crate::proxy::{LinkFault, Proxy};
use leasehold_client::{Client, ClientOptions};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Most nodes one cluster can have (the IP plan above).
pub const NODES_MAX: u64 = 9;

/// Bound on a node's start-up until it answers `status`.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Bound on one status call during a poll.
const STATUS_TIMEOUT: Duration = Duration::from_millis(800);

/// What a cluster is made of.
#[derive(Clone, Debug)]
pub struct ClusterSpec {
    /// How many founding members (1..=[`NODES_MAX`]).
    pub nodes: u64,
    /// The `leasehold` binary to run.
    pub binary: PathBuf,
    /// Where data dirs and logs go (created if missing; the caller removes it).
    pub dir: PathBuf,
    /// Extra `serve` flags for every node.
    pub serve_args: Vec<String>,
    /// Extra environment for every node (a test hook such as the power-cut
    /// model), under what [`Cluster::set_env`] adds per node.
    pub env: Vec<(String, String)>,
}

/// The loopback IP node `id` listens and dials from.
pub fn node_ip(id: u64) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, 40 + id as u8))
}

/// The loopback IP of node `id`'s proxy.
fn proxy_ip(id: u64) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, 60 + id as u8))
}

/// The node behind an endpoint URL of [`Cluster::endpoints`] (its proxy's
/// address names it), if it is one.
pub fn node_of_endpoint(url: &str) -> Option<u64> {
    let authority = url.split("://").nth(1)?.split('/').next()?;
    let host = authority
        .rsplit_once(':')
        .map_or(authority, |(host, _)| host);
    match host.parse::<IpAddr>().ok()? {
        IpAddr::V4(ip) => {
            let id = u64::from(ip.octets()[3]).checked_sub(60)?;
            (ip.octets()[..3] == [127, 0, 0] && (1..=NODES_MAX).contains(&id)).then_some(id)
        }
        IpAddr::V6(_) => None,
    }
}

/// A free TCP port on `ip` (bound, read, released).
fn free_port_on(ip: IpAddr) -> Result<u16, String> {
    let listener = TcpListener::bind((ip, 0)).map_err(|e| format!("bind {ip}:0: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

/// How a node comes into its cluster at its first start.
#[derive(Clone, Debug)]
enum Formation {
    Peers(String),
    Join,
}

/// One node: its process, its proxy, and how to start it again identically.
struct Node {
    listen: SocketAddr,
    proxy: Proxy,
    data_dir: PathBuf,
    log: PathBuf,
    formation: Formation,
    child: Option<Child>,
    /// Extra environment for its process (a clock rate, a storage hook).
    env: Vec<(String, String)>,
    starts: u32,
    /// The filesystem of its own its data dir was moved to (`disk-full`).
    tmpfs: Option<crate::tmpfs::Tmpfs>,
}

/// A running cluster (see the module doc); kills its nodes when dropped.
pub struct Cluster {
    spec: ClusterSpec,
    nodes: BTreeMap<u64, Node>,
}

impl Cluster {
    /// Starts `spec.nodes` nodes that form one cluster and waits until each
    /// answers and a leader is agreed.
    pub async fn start(spec: ClusterSpec) -> Result<Cluster, String> {
        if !(1..=NODES_MAX).contains(&spec.nodes) {
            return Err(format!(
                "a cluster has 1..={NODES_MAX} nodes, not {}",
                spec.nodes
            ));
        }
        std::fs::create_dir_all(&spec.dir)
            .map_err(|e| format!("create {}: {e}", spec.dir.display()))?;
        let mut nodes = BTreeMap::new();
        for id in 1..=spec.nodes {
            nodes.insert(id, Node::new(&spec.dir, id, Formation::Join).await?);
        }
        let peers = nodes
            .iter()
            .map(|(id, node)| format!("{id}={}", node.proxy.addr()))
            .collect::<Vec<_>>()
            .join(",");
        for node in nodes.values_mut() {
            node.formation = Formation::Peers(peers.clone());
        }
        let mut cluster = Cluster { spec, nodes };
        for id in cluster.ids() {
            cluster.spawn(id)?;
        }
        for id in cluster.ids() {
            cluster.await_answering(id).await?;
        }
        cluster.settled_leader(START_TIMEOUT).await?;
        Ok(cluster)
    }

    /// Every node's id, running or not.
    pub fn ids(&self) -> Vec<u64> {
        self.nodes.keys().copied().collect()
    }

    /// The ids of the nodes whose process runs (paused ones included).
    pub fn running(&self) -> Vec<u64> {
        let running = self.nodes.iter().filter(|(_, n)| n.child.is_some());
        running.map(|(id, _)| *id).collect()
    }

    fn node(&self, id: u64) -> Result<&Node, String> {
        self.nodes.get(&id).ok_or_else(|| format!("no node {id}"))
    }

    fn node_mut(&mut self, id: u64) -> Result<&mut Node, String> {
        self.nodes
            .get_mut(&id)
            .ok_or_else(|| format!("no node {id}"))
    }

    /// Every node's URL through its proxy (for clients).
    pub fn endpoints(&self) -> Vec<String> {
        self.nodes.values().map(|n| n.proxy.endpoint()).collect()
    }

    /// Node `id`'s URL through its proxy.
    pub fn endpoint(&self, id: u64) -> Result<String, String> {
        Ok(self.node(id)?.proxy.endpoint())
    }

    /// Node `id`'s proxy.
    pub fn proxy(&self, id: u64) -> Result<&Proxy, String> {
        Ok(&self.node(id)?.proxy)
    }

    /// Node `id`'s data dir.
    pub fn data_dir(&self, id: u64) -> Result<&Path, String> {
        Ok(&self.node(id)?.data_dir)
    }

    /// Node `id`'s log so far (every start of it).
    pub fn log_text(&self, id: u64) -> String {
        let log = self.nodes.get(&id).map(|n| n.log.clone());
        log.and_then(|log| std::fs::read_to_string(log).ok())
            .unwrap_or_default()
    }

    /// Sets extra environment for node `id`'s next starts.
    pub fn set_env(&mut self, id: u64, env: Vec<(String, String)>) -> Result<(), String> {
        self.node_mut(id)?.env = env;
        Ok(())
    }

    // -- processes ---------------------------------------------------------

    fn spawn(&mut self, id: u64) -> Result<(), String> {
        let binary = self.spec.binary.clone();
        let serve_args = self.spec.serve_args.clone();
        let spec_env = self.spec.env.clone();
        let node = self.node_mut(id)?;
        node.starts += 1;
        let mut log = File::options()
            .create(true)
            .append(true)
            .open(&node.log)
            .map_err(|e| format!("open {}: {e}", node.log.display()))?;
        let _ = writeln!(log, "===== start {} of node {id} =====", node.starts);
        let mut command = Command::new(&binary);
        command
            .arg("serve")
            .args(["--node-id", &id.to_string()])
            .args(["--listen", &node.listen.to_string()])
            .arg("--data-dir")
            .arg(&node.data_dir);
        match &node.formation {
            Formation::Peers(peers) => command.args(["--peers", peers]),
            Formation::Join => command.arg("--join"),
        };
        command
            .args(&serve_args)
            .envs(spec_env.iter().chain(&node.env).map(|(k, v)| (k, v)))
            .env("RUST_LOG", "info,openraft=warn")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        let child = command
            .spawn()
            .map_err(|e| format!("run {} serve: {e}", binary.display()))?;
        node.child = Some(child);
        Ok(())
    }

    /// Kills node `id` with SIGKILL (nothing of its shutdown runs) and reaps it.
    pub fn kill9(&mut self, id: u64) -> Result<(), String> {
        let node = self.node_mut(id)?;
        if let Some(mut child) = node.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        Ok(())
    }

    /// Sends `signal` to node `id`'s process.
    pub fn signal(&self, id: u64, signal: i32) -> Result<(), String> {
        let child = self.node(id)?.child.as_ref();
        let pid = child
            .ok_or_else(|| format!("node {id} is not running"))?
            .id();
        // SAFETY: kill(2) on a pid this process spawned and has not reaped.
        if unsafe { libc::kill(pid as libc::pid_t, signal) } != 0 {
            return Err(format!(
                "signal {signal} to node {id}: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    }

    /// Stops node `id` with SIGSTOP (a GC pause, a throttled VM).
    pub fn pause(&self, id: u64) -> Result<(), String> {
        self.signal(id, libc::SIGSTOP)
    }

    /// Resumes a paused node.
    pub fn resume(&self, id: u64) -> Result<(), String> {
        self.signal(id, libc::SIGCONT)
    }

    /// Starts node `id` again on its data dir and waits until it answers.
    pub async fn restart(&mut self, id: u64) -> Result<(), String> {
        if self.node(id)?.child.is_none() {
            self.spawn(id)?;
        }
        self.await_answering(id).await
    }

    /// Waits (bounded) until node `id`'s process exits by itself; returns
    /// how it exited.
    pub async fn wait_exit(&mut self, id: u64, within: Duration) -> Result<String, String> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(exit) = self.exited(id) {
                return Ok(exit);
            }
            if Instant::now() >= deadline {
                return Err(format!("node {id} did not exit within {within:?}"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Whether node `id`'s process has exited by itself (and reaps it).
    pub fn exited(&mut self, id: u64) -> Option<String> {
        let node = self.nodes.get_mut(&id)?;
        let status = node.child.as_mut()?.try_wait().ok().flatten()?;
        node.child = None;
        Some(status.to_string())
    }

    async fn await_answering(&mut self, id: u64) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(exit) = self.exited(id) {
                let log = self.log_text(id);
                let tail: Vec<&str> = log.lines().rev().take(20).collect();
                return Err(format!("node {id} exited ({exit}); log tail: {tail:?}"));
            }
            if self.status_of(id).await.is_some() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!("node {id} did not answer within {START_TIMEOUT:?}"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    // -- state -------------------------------------------------------------

    /// A client of the whole cluster, through the proxies.
    pub async fn client(&self) -> Result<Client, String> {
        Client::connect(self.endpoints())
            .await
            .map_err(|e| format!("connect to the cluster: {e}"))
    }

    /// Node `id`'s own status, straight from its listen address (no
    /// proxy, so partitions do not hide it); `None` if it does not answer.
    pub async fn status_of(&self, id: u64) -> Option<leasehold_client::wire::StatusResponse> {
        let node = self.nodes.get(&id)?;
        let options = ClientOptions {
            call_timeout: STATUS_TIMEOUT,
            connect_timeout: STATUS_TIMEOUT,
            retry_budget: Duration::ZERO,
            retries_max: Some(0),
            ..ClientOptions::default()
        };
        let endpoint = format!("http://{}", node.listen);
        let ask = async {
            let client = Client::connect_with([endpoint], options).await.ok()?;
            client.status().await.ok()
        };
        tokio::time::timeout(STATUS_TIMEOUT * 2, ask)
            .await
            .ok()
            .flatten()
    }

    // -- partitions --------------------------------------------------------

    /// Cuts the nodes in `side` off from the others, both ways: each proxy
    /// of one side holds the bytes from the other side's IPs.
    pub fn partition(&self, side: &[u64]) -> Result<(), String> {
        self.block(side, &self.others(side), LinkFault::PARTITION)?;
        self.block(&self.others(side), side, LinkFault::PARTITION)
    }

    /// Makes `to`'s proxies apply `fault` to traffic from `from`'s IPs.
    pub fn block(&self, from: &[u64], to: &[u64], fault: LinkFault) -> Result<(), String> {
        for &target in to {
            for &source in from {
                self.proxy(target)?.set_from(node_ip(source), fault);
            }
        }
        Ok(())
    }

    /// The ids not in `side`.
    pub fn others(&self, side: &[u64]) -> Vec<u64> {
        self.ids()
            .into_iter()
            .filter(|id| !side.contains(id))
            .collect()
    }

    /// Lifts every network fault on every proxy.
    pub fn heal(&self) {
        for node in self.nodes.values() {
            node.proxy.heal();
        }
    }
}

impl Node {
    async fn new(dir: &Path, id: u64, formation: Formation) -> Result<Node, String> {
        if !(1..=NODES_MAX).contains(&id) {
            return Err(format!("node id {id} is outside 1..={NODES_MAX}"));
        }
        let listen = SocketAddr::new(node_ip(id), free_port_on(node_ip(id))?);
        let proxy = Proxy::start(proxy_ip(id), listen)
            .await
            .map_err(|e| format!("start node {id}'s proxy on {}: {e}", proxy_ip(id)))?;
        Ok(Node {
            listen,
            proxy,
            data_dir: dir.join(format!("node-{id}")),
            log: dir.join(format!("node-{id}.log")),
            formation,
            child: None,
            env: Vec::new(),
            starts: 0,
            tmpfs: None,
        })
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for node in self.nodes.values_mut() {
            if let Some(mut child) = node.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_names_its_node_by_its_proxys_address() {
        assert_eq!(node_of_endpoint("http://127.0.0.62:40663"), Some(2));
        assert_eq!(node_of_endpoint("https://127.0.0.69:1/"), Some(9));
        assert_eq!(node_of_endpoint("http://127.0.0.60:5"), None);
        assert_eq!(node_of_endpoint("http://127.0.0.1:5"), None);
        assert_eq!(node_of_endpoint("http://10.0.0.61:5"), None);
        assert_eq!(node_of_endpoint("not a url"), None);
    }
}
