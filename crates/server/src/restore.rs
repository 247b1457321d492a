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

/// Where tokens start after a restore, as the operator named it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Floor {
    /// Above this token.
    At(u64),
    /// This far above the restored state's revision.
    AboveBy(u64),
}

impl Floor {
    /// The floor for a state at `revision`.
    fn for_revision(self, revision: u64) -> Result<u64, String> {
        match self {
            Floor::At(floor) => Ok(floor),
            Floor::AboveBy(gap) => revision.checked_add(gap).ok_or_else(|| {
                format!("a revision gap of {gap} above {revision} overflows a token")
            }),
        }
    }
}

/// How to restore.
#[derive(Clone, Debug)]
pub struct RestorePlan {
    /// Every token and lease id handed out after the restore is above this.
    pub floor: Floor,
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
    let state = decode_state(&backup.data).map_err(|e| format!("the backup's state: {e}"))?;
    let (state, restored) = prepare(state, plan)?;
    write(dir, state, &restored, plan).await?;
    Ok(restored)
}

/// `serve --force-new-cluster`: the state this node's data dir holds (its
/// snapshot and every entry of its log after it, applied whether or not
/// the lost majority committed it) becomes a one-member cluster's, under
/// the same floor rule as a restore. Everything that can be refused is
/// checked before the data dir is touched; then it is renamed aside (kept)
/// and the new one written. Returns what was done and where the old data went.
pub async fn force_new_cluster(
    dir: &Path,
    plan: &RestorePlan,
) -> Result<(Restored, std::path::PathBuf), String> {
    let holds_data = dir.join(crate::storage::DB_FILE_NAME).exists();
    if !holds_data {
        return Err(format!(
            "{} holds no node's data: --force-new-cluster rebuilds a cluster from a survivor's \
             data dir (to start from a backup, use `leasehold snapshot restore`)",
            dir.display()
        ));
    }
    let state = survivor_state(dir).await?;
    let (state, restored) = prepare(state, plan)?;
    let name = dir
        .file_name()
        .map_or("data".into(), |n| n.to_string_lossy().into_owned());
    let now = crate::clock::wall_unix_ms();
    let aside = dir.with_file_name(format!("{name}.before-force-new-cluster-{now}"));
    std::fs::rename(dir, &aside).map_err(|e| {
        format!(
            "cannot move {} aside to {}: {e}",
            dir.display(),
            aside.display()
        )
    })?;
    write(dir, state, &restored, plan).await?;
    Ok((restored, aside))
}

/// The state of the data dir `dir`: its snapshot, then its whole log.
async fn survivor_state(dir: &Path) -> Result<leasehold_core::State, String> {
    use openraft::storage::{RaftLogReader, RaftLogStorage};
    let opened = crate::storage::open(dir, Arc::new(NoopListener));
    let (mut log, mut machine) = opened.map_err(|e| format!("cannot open the data dir: {e}"))?;
    let read = |e: openraft::StorageError<u64>| format!("cannot read the data dir: {e}");
    let (applied, _) = machine.applied_state().await.map_err(read)?;
    let last = log.get_log_state().await.map_err(read)?.last_log_id;
    let from = applied.map_or(0, |id| id.index + 1);
    if let Some(last) = last.filter(|last| last.index >= from) {
        let entries = log
            .try_get_log_entries(from..=last.index)
            .await
            .map_err(read)?;
        machine.apply(entries).await.map_err(read)?;
    }
    Ok(machine.applied_copy().state)
}

/// `state` made the start of a new cluster under `plan` (its leases ended
/// unless kept, its revision raised to the floor), and what that did.
fn prepare(
    mut state: leasehold_core::State,
    plan: &RestorePlan,
) -> Result<(leasehold_core::State, Restored), String> {
    if plan.members.is_empty() {
        return Err("a restored cluster needs a member".into());
    }
    let backup_revision = state.revision().0;
    let floor = plan.floor.for_revision(backup_revision)?;
    let now = crate::clock::wall_unix_ms();
    let leases_ended = state
        .restore_for_new_cluster(Revision(floor), plan.keep_leases, now)
        .map_err(|e| e.to_string())?;
    let restored = Restored {
        backup_revision,
        floor,
        leases_ended,
        locks: state.lock_count(),
        leases: state.lease_count(),
    };
    Ok((state, restored))
}

/// Writes the prepared `state` into the empty `dir` as a new cluster's
/// first snapshot.
async fn write(
    dir: &Path,
    state: leasehold_core::State,
    restored: &Restored,
    plan: &RestorePlan,
) -> Result<(), String> {
    refuse_used(dir)?;
    let first = *plan.members.keys().next().expect("checked by prepare");
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
        snapshot_id: format!("restored-{}-{}", restored.backup_revision, restored.floor),
    };
    let opened = crate::storage::open(dir, Arc::new(NoopListener));
    let (log, mut machine) = opened.map_err(|e| format!("cannot create the data dir: {e}"))?;
    machine
        .install_snapshot(&meta, Box::new(Cursor::new(data)))
        .await
        .map_err(|e| format!("cannot write the restored state: {e}"))?;
    drop((log, machine));
    Ok(())
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
