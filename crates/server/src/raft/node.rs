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
//!
//! Before Raft forms anything, the node gets its cluster id
//! ([`crate::identity::establish`]); a node on an empty data dir with
//! `--peers` asks its peers first, and does not start if they saw it take
//! part in their cluster before (it lost its data, and with it its votes).

use super::commit_thread::CommitThread;
use super::network::Network;
use super::types::Raft;
use crate::identity::establish::establish;
use crate::identity::Identity;
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

/// How often the leader sends heartbeats, ms (the default of
/// [`RaftTimings::heartbeat_interval`]).
pub const HEARTBEAT_INTERVAL_MS: u64 = 100;
/// A follower that stops hearing from its leader campaigns after openraft's
/// follower lease (`election_timeout_max`) plus a random election timeout
/// between these, ms (the defaults of [`RaftTimings`]).
pub const ELECTION_TIMEOUT_MIN_MS: u64 = 500;
/// See [`ELECTION_TIMEOUT_MIN_MS`].
pub const ELECTION_TIMEOUT_MAX_MS: u64 = 1_000;

/// How long a leader's leadership holds after a quorum last acknowledged
/// it (the default of [`RaftTimings::leader_lease`]). openraft gives
/// followers the same lease (a follower that heard from its leader refuses
/// other candidates for `election_timeout_max`), so past it the followers
/// may have elected a new leader: a leader whose last quorum
/// acknowledgement is older is *without quorum* (not ready; refuses writes
/// and linearizable reads), and a member not heard from for longer counts
/// as unreachable. Ten heartbeats: a few lost ones do not trip it.
pub const LEADER_LEASE: Duration = Duration::from_millis(ELECTION_TIMEOUT_MAX_MS);

/// Heartbeats a leader lease spans at least, so that a few lost ones do
/// not cost the leader its quorum.
pub const LEASE_HEARTBEATS_MIN: u32 = 5;

/// Raft's timings: openraft's heartbeat and election timeouts, and the
/// leader lease the quorum monitor holds a leader to. The failover margin
/// depends on them ([`crate::ServeConfig::validate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaftTimings {
    /// How often the leader sends heartbeats.
    pub heartbeat_interval: Duration,
    /// Shortest election timeout: a follower's random wait before it
    /// campaigns (after openraft's follower lease, `election_timeout_max`).
    pub election_timeout_min: Duration,
    /// Longest election timeout; also openraft's follower lease.
    pub election_timeout_max: Duration,
    /// How long a leader counts as leading after a quorum last
    /// acknowledged it; at most `election_timeout_max` (see [`LEADER_LEASE`]).
    pub leader_lease: Duration,
}

impl Default for RaftTimings {
    fn default() -> RaftTimings {
        RaftTimings {
            heartbeat_interval: Duration::from_millis(HEARTBEAT_INTERVAL_MS),
            election_timeout_min: Duration::from_millis(ELECTION_TIMEOUT_MIN_MS),
            election_timeout_max: Duration::from_millis(ELECTION_TIMEOUT_MAX_MS),
            leader_lease: LEADER_LEASE,
        }
    }
}

impl RaftTimings {
    /// Checks the timings together; the error says which and what to change.
    pub fn validate(&self) -> Result<(), String> {
        let (heartbeat, min, max, lease) = (
            self.heartbeat_interval.as_millis(),
            self.election_timeout_min.as_millis(),
            self.election_timeout_max.as_millis(),
            self.leader_lease.as_millis(),
        );
        if heartbeat == 0 || min <= heartbeat || max <= min {
            return Err(format!(
                "raft timings need 0 < heartbeat interval ({heartbeat} ms) < election timeout min ({min} ms) < election timeout max ({max} ms)"
            ));
        }
        if lease > max {
            return Err(format!(
                "leader lease {lease} ms exceeds election timeout max {max} ms, openraft's follower lease: a leader cut off from the others would still answer as leader after they elected another; shorten the leader lease to at most {max} ms"
            ));
        }
        let lease_min = heartbeat * u128::from(LEASE_HEARTBEATS_MIN);
        if lease < lease_min {
            return Err(format!(
                "leader lease {lease} ms spans fewer than {LEASE_HEARTBEATS_MIN} heartbeats of {heartbeat} ms: a few lost heartbeats would cost the leader its quorum; lengthen it to at least {lease_min} ms or shorten the heartbeat interval"
            ));
        }
        Ok(())
    }
}

/// The openraft configuration, validated.
pub fn raft_config(
    timings: &RaftTimings,
    snapshot_every_entries: u64,
) -> Result<Arc<Config>, ServeError> {
    let config = Config {
        cluster_name: "leasehold".into(),
        heartbeat_interval: timings.heartbeat_interval.as_millis() as u64,
        election_timeout_min: timings.election_timeout_min.as_millis() as u64,
        election_timeout_max: timings.election_timeout_max.as_millis() as u64,
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
    /// the other members started with the same list (`--peers`).
    Initialize(BTreeMap<u64, String>),
    /// Form a one-member cluster of this node, reached at `addr` (no
    /// `--peers`).
    Alone { addr: String },
    /// Join an existing cluster: wait to be added as a member.
    Join,
}

/// How Raft starts: the node, how it forms a cluster, and its storage.
pub struct Start {
    /// This node's Raft id.
    pub node_id: u64,
    /// Its connections to the other nodes.
    pub network: Network,
    /// How it forms a cluster on an empty data dir.
    pub formation: Formation,
    /// The token a `--peers` cluster's id is derived with.
    pub cluster_token: String,
    /// Log entries between snapshots.
    pub snapshot_every_entries: u64,
    /// Heartbeat and election timeouts.
    pub timings: RaftTimings,
    /// Its cluster identity, given an id here before Raft forms anything.
    pub identity: Arc<Identity>,
}

/// Starts Raft as `start` says on the given stores, its tasks on `commit`:
/// gives the node its cluster id, then, on an empty data dir, forms the
/// cluster as `start.formation` says.
pub async fn start(
    start: Start,
    log_store: LogStore,
    state_machine: StateMachineStore,
    commit: &CommitThread,
) -> Result<Raft, ServeError> {
    let node_id = start.node_id;
    let config = raft_config(&start.timings, start.snapshot_every_entries)?;
    let dialer = start.network.dialer.clone();
    let network = start.network;
    let raft = commit
        .run(Raft::new(
            node_id,
            config,
            network,
            log_store,
            state_machine,
        ))
        .await
        .ok_or_else(|| ServeError::Raft("the commit thread stopped while Raft started".into()))?
        .map_err(|error| ServeError::Raft(error.to_string()))?;
    let established = establish(
        &raft,
        &start.identity,
        &start.formation,
        &start.cluster_token,
        &dialer,
    )
    .await;
    if let Err(error) = established {
        // Refused (or failed): stop Raft so that it lets go of the storage.
        if let Err(stopping) = raft.shutdown().await {
            tracing::warn!(%stopping, "raft did not shut down cleanly");
        }
        return Err(error);
    }
    let initialized = raft
        .is_initialized()
        .await
        .map_err(|error| ServeError::Raft(error.to_string()))?;
    let members = match start.formation {
        _ if initialized => return Ok(raft),
        Formation::Join => {
            tracing::info!(
                node_id,
                "waiting to be added to a cluster (leasehold member add)"
            );
            return Ok(raft);
        }
        Formation::Initialize(members) => members,
        Formation::Alone { addr } => BTreeMap::from([(node_id, addr)]),
    };
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
    Ok(raft)
}
