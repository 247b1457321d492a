//! Validated server configuration. Only a validated `ServeConfig` reaches the
//! node: inconsistent settings are refused at start-up with a clear error.

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
        }
    }

    /// Checks the settings together.
    pub fn validate(&self) -> Result<(), crate::ServeError> {
        if self.node_id == 0 {
            return Err(crate::ServeError::Config(
                "node id must not be 0: pass --node-id 1 or higher".into(),
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
