//! Starting Raft on this node: the validated openraft configuration, and the
//! one-member initialization on first start.

use super::network::Network;
use super::types::Raft;
use crate::storage::{LogStore, StateMachineStore};
use crate::ServeError;
use openraft::{BasicNode, Config, SnapshotPolicy};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Log entries between snapshots: bounds the log and the replay at restart.
pub const SNAPSHOT_EVERY_ENTRIES: u64 = 20_000;
/// Log entries kept behind a snapshot, for slow followers.
pub const LOG_KEPT_BEHIND_SNAPSHOT: u64 = 2_000;

/// The openraft configuration, validated.
pub fn raft_config(snapshot_every_entries: u64) -> Result<Arc<Config>, ServeError> {
    let config = Config {
        cluster_name: "leasehold".into(),
        heartbeat_interval: 100,
        election_timeout_min: 500,
        election_timeout_max: 1_000,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(snapshot_every_entries),
        max_in_snapshot_log_to_keep: LOG_KEPT_BEHIND_SNAPSHOT.min(snapshot_every_entries),
        ..Config::default()
    };
    let config = config
        .validate()
        .map_err(|error| ServeError::Raft(format!("invalid raft configuration: {error}")))?;
    Ok(Arc::new(config))
}

/// Starts Raft for `node_id` on the given stores; on a fresh data dir,
/// initializes a one-member cluster of this node at `addr`.
pub async fn start(
    node_id: u64,
    addr: String,
    snapshot_every_entries: u64,
    log_store: LogStore,
    state_machine: StateMachineStore,
) -> Result<Raft, ServeError> {
    let config = raft_config(snapshot_every_entries)?;
    let raft = Raft::new(node_id, config, Network, log_store, state_machine)
        .await
        .map_err(|error| ServeError::Raft(error.to_string()))?;
    let initialized = raft
        .is_initialized()
        .await
        .map_err(|error| ServeError::Raft(error.to_string()))?;
    if !initialized {
        let members = BTreeMap::from([(node_id, BasicNode { addr })]);
        raft.initialize(members)
            .await
            .map_err(|error| ServeError::Raft(format!("cannot initialize the cluster: {error}")))?;
        tracing::info!(node_id, "initialized a one-member cluster");
    }
    Ok(raft)
}
