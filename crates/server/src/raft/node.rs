//! Starting Raft on this node: the validated openraft configuration, and
//! forming the cluster on first start.
//!
//! Formation works like etcd's `--initial-cluster`: every node of a new
//! cluster starts with the same member list (`--peers`) on an empty data
//! dir and initializes Raft with it. openraft makes that safe when the
//! lists agree (the first log entry is the same membership everywhere), so
//! the cluster forms exactly once. A node whose data dir already holds a
//! cluster ignores the list. A node started to *join* an existing cluster
//! initializes nothing and waits to be added (`leasehold member add`).

use super::network::Network;
use super::types::Raft;
use crate::storage::{LogStore, StateMachineStore};
use crate::ServeError;
use openraft::{BasicNode, Config, SnapshotPolicy};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Log entries between snapshots: bounds the log and the replay at restart.
pub const SNAPSHOT_EVERY_ENTRIES: u64 = 20_000;
/// Log entries kept behind a snapshot, for slow followers.
pub const LOG_KEPT_BEHIND_SNAPSHOT: u64 = 2_000;

/// How often the leader sends heartbeats, ms.
pub const HEARTBEAT_INTERVAL_MS: u64 = 100;
/// A follower that stops hearing from its leader campaigns after a random
/// election timeout between these, ms.
pub const ELECTION_TIMEOUT_MIN_MS: u64 = 500;
/// See [`ELECTION_TIMEOUT_MIN_MS`].
pub const ELECTION_TIMEOUT_MAX_MS: u64 = 1_000;

/// How long a leader's leadership holds after a quorum last acknowledged
/// it. openraft gives followers the same lease (a follower that heard from
/// its leader refuses other candidates for `election_timeout_max`), so past
/// it the followers may have elected a new leader: a leader whose last
/// quorum acknowledgement is older is *without quorum* (not ready; refuses
/// writes and linearizable reads), and a member not heard from for longer
/// counts as unreachable. Ten heartbeats: a few lost ones do not trip it.
pub const LEADER_LEASE: Duration = Duration::from_millis(ELECTION_TIMEOUT_MAX_MS);
const _: () = assert!(ELECTION_TIMEOUT_MAX_MS >= 5 * HEARTBEAT_INTERVAL_MS);

/// The openraft configuration, validated.
pub fn raft_config(snapshot_every_entries: u64) -> Result<Arc<Config>, ServeError> {
    let config = Config {
        cluster_name: "leasehold".into(),
        heartbeat_interval: HEARTBEAT_INTERVAL_MS,
        election_timeout_min: ELECTION_TIMEOUT_MIN_MS,
        election_timeout_max: ELECTION_TIMEOUT_MAX_MS,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(snapshot_every_entries),
        // Entries per AppendEntries: each is a batch of up to 4,096
        // commands, so keep one message well under RAFT_MESSAGE_BYTES_MAX.
        max_payload_entries: 32,
        max_in_snapshot_log_to_keep: LOG_KEPT_BEHIND_SNAPSHOT.min(snapshot_every_entries),
        ..Config::default()
    };
    let config = config
        .validate()
        .map_err(|error| ServeError::Raft(format!("invalid raft configuration: {error}")))?;
    Ok(Arc::new(config))
}

/// How this node's Raft starts on an empty data dir.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Formation {
    /// Form a cluster of these members (node id → address), together with
    /// the other members started with the same list.
    Initialize(BTreeMap<u64, String>),
    /// Join an existing cluster: wait to be added as a member.
    Join,
}

/// Starts Raft for `node_id` on the given stores; on an empty data dir,
/// forms the cluster as `formation` says.
pub async fn start(
    node_id: u64,
    network: Network,
    formation: Formation,
    snapshot_every_entries: u64,
    log_store: LogStore,
    state_machine: StateMachineStore,
) -> Result<Raft, ServeError> {
    let config = raft_config(snapshot_every_entries)?;
    let raft = Raft::new(node_id, config, network, log_store, state_machine)
        .await
        .map_err(|error| ServeError::Raft(error.to_string()))?;
    let initialized = raft
        .is_initialized()
        .await
        .map_err(|error| ServeError::Raft(error.to_string()))?;
    match formation {
        _ if initialized => {}
        Formation::Join => {
            tracing::info!(
                node_id,
                "waiting to be added to a cluster (leasehold member add)"
            );
        }
        Formation::Initialize(members) => {
            let size = members.len();
            let members = members
                .into_iter()
                .map(|(id, addr)| (id, BasicNode { addr }))
                .collect::<BTreeMap<_, _>>();
            match raft.initialize(members).await {
                Ok(()) => tracing::info!(node_id, size, "formed a cluster"),
                // Another member's initialization reached us first.
                Err(openraft::error::RaftError::APIError(
                    openraft::error::InitializeError::NotAllowed(_),
                )) => {}
                Err(error) => {
                    return Err(ServeError::Raft(format!(
                        "cannot form the cluster: {error}"
                    )))
                }
            }
        }
    }
    Ok(raft)
}
