//! The Raft state machine: [`leasehold_core::State`] in memory, snapshots in
//! redb and their files (`snapshot_store`).
//!
//! Applying does no I/O: the log is the durable record, and on restart the
//! state is rebuilt from the latest snapshot plus openraft re-applying the
//! committed entries after it. A snapshot is the postcard encoding of
//! `(State, last_applied, last_membership)` followed by the state's
//! semaphores and read-write locks (see `encode`), after the mark of the
//! data format that wrote it (`format::mark_snapshot`).

use super::format;
use super::snapshot_store::{self, Meta};
use super::{blocking, AppliedState, ApplyListener, DbError, DiskHealth, SharedState};
use crate::raft::types::{BatchOutcome, LogId, TypeConfig};
use leasehold_core::State;
use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    BasicNode, Entry, EntryPayload, OptionalSend, RaftSnapshotBuilder, StorageError,
    StorageIOError, StoredMembership,
};
use redb::Database;
use std::io::Cursor;
use std::path::Path;
use std::sync::Arc;

/// The state machine half of the storage. Cheap to clone: clones share the
/// state, the database and the listener; a clone is its snapshot builder.
#[derive(Clone)]
pub struct StateMachineStore {
    /// The file shared with the log store; holds the latest snapshot's meta.
    db: Arc<Database>,
    /// The data dir, whose `snapshots/` holds the snapshot files.
    dir: Arc<Path>,
    /// The applied state, also read by the server.
    shared: SharedState,
    /// Told about every applied entry, under the write lock, in log order.
    listener: Arc<dyn ApplyListener>,
    /// Whether the disk has room: snapshots are written only when it has.
    disk: Arc<DiskHealth>,
}

impl StateMachineStore {
    /// Builds the state machine from the latest stored snapshot, if any, and
    /// then calls `listener.reset` with it.
    pub(crate) fn load(
        db: Arc<Database>,
        dir: &Path,
        listener: Arc<dyn ApplyListener>,
        disk: Arc<DiskHealth>,
    ) -> Result<Self, DbError> {
        let shared = SharedState::default();
        snapshot_store::remove_unnamed_files(&db, dir)?;
        if let Some(stored) = snapshot_store::load(&db, dir)? {
            let loaded =
                decode(&stored.meta, &stored.data).map_err(|e| DbError::CorruptSnapshot {
                    why: format!("its {} bytes do not decode: {e}", stored.data.len()),
                })?;
            shared.write(|applied| {
                *applied = loaded;
                listener.reset(&applied.state);
            });
        }
        Ok(Self {
            db,
            dir: dir.into(),
            shared,
            listener,
            disk,
        })
    }

    /// A handle through which the server reads the applied state.
    pub fn shared(&self) -> SharedState {
        self.shared.clone()
    }

    /// Applies one entry under the write lock and returns its outcome.
    fn apply_one(&self, entry: Entry<TypeConfig>) -> BatchOutcome {
        self.shared.write(|applied| {
            applied.last_applied = Some(entry.log_id);
            match entry.payload {
                EntryPayload::Blank => BatchOutcome::default(),
                EntryPayload::Normal(batch) => {
                    let at_unix_ms = batch.at_unix_ms;
                    let outcome = BatchOutcome {
                        applied: batch
                            .commands
                            .into_iter()
                            .map(|command| applied.state.apply(command, at_unix_ms))
                            .collect(),
                    };
                    self.listener.applied(
                        &applied.state,
                        entry.log_id.index,
                        at_unix_ms,
                        &outcome.applied,
                    );
                    outcome
                }
                EntryPayload::Membership(membership) => {
                    applied.last_membership = StoredMembership::new(Some(entry.log_id), membership);
                    BatchOutcome::default()
                }
            }
        })
    }
}

/// Encodes the applied state as snapshot bytes: the state, the last
/// applied log id and membership, then the semaphores and read-write locks
/// (`State::stored_pools`), then the sets of locks waited for
/// (`State::stored_lock_sets`), each after what existed before it, so
/// that a snapshot written before it existed, which ends before it, reads
/// as having none.
pub(crate) fn encode(applied: &AppliedState) -> Result<Vec<u8>, postcard::Error> {
    let mut out = Vec::new();
    format::mark_snapshot(&mut out);
    postcard::to_extend(
        &(
            &applied.state,
            &applied.last_applied,
            &applied.last_membership,
            applied.state.stored_pools(),
            applied.state.stored_lock_sets(),
        ),
        out,
    )
}

/// Snapshot bytes of `state` alone, at no log position and with no
/// members (seeds of the snapshot fuzz target).
pub fn encode_state(state: State) -> Result<Vec<u8>, postcard::Error> {
    encode(&AppliedState {
        state,
        last_applied: None,
        last_membership: StoredMembership::default(),
    })
}

/// Decodes the state alone from snapshot bytes (a backup's, for its
/// status and its restore).
pub fn decode_state(data: &[u8]) -> Result<State, DbError> {
    let meta = Meta {
        last_log_id: None,
        last_membership: StoredMembership::default(),
        snapshot_id: String::new(),
    };
    Ok(decode(&meta, data)?.state)
}

/// Decodes snapshot bytes. The meta's log id and membership are authoritative.
fn decode(meta: &Meta, data: &[u8]) -> Result<AppliedState, DbError> {
    type Encoded = (State, Option<LogId>, StoredMembership<u64, BasicNode>);
    let ((mut state, _last_applied, _last_membership), pools): (Encoded, &[u8]) =
        postcard::take_from_bytes(format::snapshot_body(data)?)?;
    if !pools.is_empty() {
        let (pools, sets): (_, &[u8]) = postcard::take_from_bytes(pools)?;
        state.restore_pools(pools);
        if !sets.is_empty() {
            state.restore_lock_sets(postcard::from_bytes(sets)?);
        }
    }
    state.settle_decoded();
    Ok(AppliedState {
        state,
        last_applied: meta.last_log_id,
        last_membership: meta.last_membership.clone(),
    })
}

impl StateMachineStore {
    /// A copy of the applied state (O(1): its tables are persistent maps).
    pub fn applied_copy(&self) -> AppliedState {
        self.shared.read_applied(AppliedState::clone)
    }
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachineStore {
    /// Copies the state under the read lock, in O(1) (its big tables are
    /// persistent maps that share their nodes), then encodes the copy and
    /// stores the snapshot durably off the runtime. The apply path waits
    /// only for the copy; a row changed while the copy lives is copied
    /// then (its B-tree leaf, once). See docs/DESIGN.md §6d.
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<u64>> {
        let started = std::time::Instant::now();
        let copy = self.shared.read_applied(AppliedState::clone);
        let copied = started.elapsed();
        let (db, dir) = (self.db.clone(), self.dir.clone());
        self.disk.room().await;
        let (meta, data) = blocking(move || {
            let data = encode(&copy)?;
            let AppliedState {
                last_applied,
                last_membership,
                ..
            } = copy;
            let meta = snapshot_store::save_built(&db, &dir, last_applied, last_membership, &data)?;
            Ok((meta, data))
        })
        .await
        .map_err(|e| StorageIOError::write_snapshot(None, &e))?;
        tracing::info!(
            index = meta.last_log_id.map_or(0, |id| id.index),
            bytes = data.len(),
            copy_us = copied.as_micros() as u64,
            total_ms = started.elapsed().as_millis() as u64,
            "snapshot built"
        );
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachineStore {
    type SnapshotBuilder = Self;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId>, StoredMembership<u64, BasicNode>), StorageError<u64>> {
        Ok(self
            .shared
            .read_applied(|applied| (applied.last_applied, applied.last_membership.clone())))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<BatchOutcome>, StorageError<u64>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        // The entries' log lines are written at once, after the state lock
        // is released (see `log_lines`), and their per-lock lines reach
        // their thread in one message (see `sinks::lock_lines`).
        Ok(crate::sinks::lock_lines::held(|| {
            crate::log_lines::batched(|| {
                entries
                    .into_iter()
                    .map(|entry| self.apply_one(entry))
                    .collect()
            })
        }))
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<Cursor<Vec<u8>>>, StorageError<u64>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    /// Decodes first (a corrupt snapshot changes nothing), persists, then
    /// swaps the state and calls `listener.reset` under the write lock.
    async fn install_snapshot(
        &mut self,
        meta: &Meta,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError<u64>> {
        let started = std::time::Instant::now();
        let data = snapshot.into_inner();
        let bytes = data.len();
        let installed = decode(meta, &data)
            .map_err(|e| StorageIOError::read_snapshot(Some(meta.signature()), &e))?;
        let (db, dir) = (self.db.clone(), self.dir.clone());
        let stored_meta = meta.clone();
        self.disk.room().await;
        blocking(move || snapshot_store::save_installed(&db, &dir, &stored_meta, &data))
            .await
            .map_err(|e| StorageIOError::write_snapshot(Some(meta.signature()), &e))?;
        self.shared.write(|applied| {
            *applied = installed;
            self.listener.reset(&applied.state);
        });
        tracing::info!(
            index = meta.last_log_id.map_or(0, |id| id.index),
            bytes,
            total_ms = started.elapsed().as_millis() as u64,
            "snapshot installed from the leader"
        );
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<u64>> {
        let stored = snapshot_store::load(&self.db, &self.dir)
            .map_err(|e| StorageIOError::read_snapshot(None, &e))?;
        Ok(stored.map(|stored| Snapshot {
            meta: stored.meta,
            snapshot: Box::new(Cursor::new(stored.data)),
        }))
    }
}

#[cfg(test)]
#[path = "state_machine_tests.rs"]
mod tests;
