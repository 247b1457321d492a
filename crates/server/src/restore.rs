//! Writing a new node's data dir from a backup (`leasehold snapshot
//! restore`): the backup's state, prepared for a new cluster
//! (`State::restore_for_new_cluster`: its revision raised to the token
//! floor, its leases ended unless kept), installed as the node's snapshot
//! at log index 1 with the new cluster's membership, as if a leader had
//! sent it. openraft starts from it as from any snapshot: the log begins
//! after it, the members elect a leader, and the first grant's token is
//! above the floor. Every member of a restored cluster is restored from the
//! same backup with the same floor and members, so they start identical.

use crate::backup::Backup;
use crate::raft::types::LogId;
use crate::storage::{decode_state, encode_snapshot, AppliedState, NoopListener};
use leasehold_core::Revision;
use openraft::storage::RaftStateMachine;
use openraft::{BasicNode, CommittedLeaderId, Membership, SnapshotMeta, StoredMembership};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Cursor;
use std::path::Path;
use std::sync::Arc;

/// How to restore.
#[derive(Clone, Debug)]
pub struct RestorePlan {
    /// Every token and lease id handed out after the restore is above this.
    pub floor: u64,
    /// Keep the backup's leases (and so their locks) instead of ending them.
    pub keep_leases: bool,
    /// The new cluster's members: id → address (this node among them).
    pub members: BTreeMap<u64, String>,
}

/// What a restore did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Restored {
    pub backup_revision: u64,
    pub floor: u64,
    pub leases_ended: usize,
    pub locks: usize,
    pub leases: usize,
}

/// Writes `dir` (which must not hold a node's data) from `backup`.
pub async fn restore(dir: &Path, backup: &Backup, plan: &RestorePlan) -> Result<Restored, String> {
    refuse_used(dir)?;
    let mut state = decode_state(&backup.data).map_err(|e| format!("the backup's state: {e}"))?;
    let backup_revision = state.revision().0;
    let now = crate::clock::wall_unix_ms();
    let leases_ended = state
        .restore_for_new_cluster(Revision(plan.floor), plan.keep_leases, now)
        .map_err(|e| e.to_string())?;
    let restored = Restored {
        backup_revision,
        floor: plan.floor,
        leases_ended,
        locks: state.lock_count(),
        leases: state.lease_count(),
    };
    let first = *plan
        .members
        .keys()
        .next()
        .ok_or("a restored cluster needs a member")?;
    let log_id = LogId::new(CommittedLeaderId::new(1, first), 1);
    let voters: BTreeSet<u64> = plan.members.keys().copied().collect();
    let nodes: BTreeMap<u64, BasicNode> = plan
        .members
        .iter()
        .map(|(id, addr)| (*id, BasicNode { addr: addr.clone() }))
        .collect();
    let membership = StoredMembership::new(Some(log_id), Membership::new(vec![voters], nodes));
    let applied = AppliedState {
        state,
        last_applied: Some(log_id),
        last_membership: membership.clone(),
    };
    let data = encode_snapshot(&applied).map_err(|e| format!("cannot encode the state: {e}"))?;
    let meta = SnapshotMeta {
        last_log_id: Some(log_id),
        last_membership: membership,
        snapshot_id: format!("restored-{backup_revision}-{}", plan.floor),
    };
    let opened = crate::storage::open(dir, Arc::new(NoopListener));
    let (log, mut machine) = opened.map_err(|e| format!("cannot create the data dir: {e}"))?;
    machine
        .install_snapshot(&meta, Box::new(Cursor::new(data)))
        .await
        .map_err(|e| format!("cannot write the restored state: {e}"))?;
    drop((log, machine));
    Ok(restored)
}

/// A restore writes a new node: refuse a dir that already holds one.
fn refuse_used(dir: &Path) -> Result<(), String> {
    let used = std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some());
    if used {
        return Err(format!(
            "{} is not empty: a restore builds a new node in an empty (or missing) data dir, \
             and never overwrites one",
            dir.display()
        ));
    }
    Ok(())
}
