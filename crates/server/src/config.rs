//! Validated server configuration. Only a validated `ServeConfig` reaches the
//! node: inconsistent settings are refused at start-up with a clear error.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// How to run one node.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// Directory of the durable log and snapshots.
    pub data_dir: PathBuf,
    /// Address of the gRPC + HTTP port.
    pub listen: SocketAddr,
    /// This node's Raft id (≠ 0).
    pub node_id: u64,
    /// Extra time a lease gets when a new leader takes over (guarantee 5).
    pub failover_margin: Duration,
    /// Log entries between snapshots (bounds the log and the replay at restart).
    pub snapshot_every_entries: u64,
    /// The members of a new cluster (node id → host:port other nodes and
    /// clients reach it at), the same on every member. Empty: a one-member
    /// cluster of this node at `listen`. Used only on an empty data dir.
    pub peers: BTreeMap<u64, String>,
    /// Start without forming a cluster and wait to be added to one.
    pub join: bool,
    /// Mixed into the cluster id a `peers` cluster derives from its member
    /// list: each cluster formed at the same addresses needs its own (like
    /// etcd's `--initial-cluster-token`). Used only on an empty data dir.
    pub cluster_token: String,
}

impl ServeConfig {
    /// The embedded single-node default: `./leasehold-data`, 127.0.0.1:7420.
    pub fn single_node(data_dir: PathBuf, listen: SocketAddr) -> ServeConfig {
        ServeConfig {
            data_dir,
            listen,
            node_id: 1,
            failover_margin: Duration::from_millis(500),
            snapshot_every_entries: crate::raft::node::SNAPSHOT_EVERY_ENTRIES,
            peers: BTreeMap::new(),
            join: false,
            cluster_token: crate::identity::DEFAULT_CLUSTER_TOKEN.into(),
        }
    }

    /// How Raft starts on an empty data dir.
    pub fn formation(&self) -> crate::raft::node::Formation {
        use crate::raft::node::Formation;
        if self.join {
            return Formation::Join;
        }
        if self.peers.is_empty() {
            return Formation::Alone {
                addr: self.listen.to_string(),
            };
        }
        Formation::Initialize(self.peers.clone())
    }

    /// Checks the settings together.
    pub fn validate(&self) -> Result<(), crate::ServeError> {
        if self.node_id == 0 {
            return Err(crate::ServeError::Config(
                "node id must not be 0: pass --node-id 1 or higher".into(),
            ));
        }
        if self.join && !self.peers.is_empty() {
            return Err(crate::ServeError::Config(
                "--join and --peers exclude each other: --peers forms a new cluster, --join waits to be added to one".into(),
            ));
        }
        if !self.peers.is_empty() && !self.peers.contains_key(&self.node_id) {
            return Err(crate::ServeError::Config(format!(
                "--peers must list this node (--node-id {}) with its address",
                self.node_id
            )));
        }
        if let Some((id, addr)) = self
            .peers
            .iter()
            .find(|(id, addr)| **id == 0 || addr.is_empty())
        {
            return Err(crate::ServeError::Config(format!(
                "--peers entry {id}={addr:?}: node ids start at 1 and every node needs an address"
            )));
        }
        if self.cluster_token.is_empty() {
            return Err(crate::ServeError::Config(
                "--cluster-token must not be empty (the default is \"leasehold\")".into(),
            ));
        }
        if self.snapshot_every_entries == 0 {
            return Err(crate::ServeError::Config(
                "snapshot_every_entries must be at least 1".into(),
            ));
        }
        Ok(())
    }
}
