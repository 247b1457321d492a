//! The applied state, shared between the state machine (writer) and the
//! server's read paths (Get, List, Status).
//!
//! A `std::sync::RwLock` rather than tokio's: every access is a short,
//! synchronous closure, and the closure API makes holding the guard across an
//! `.await` impossible.

use crate::raft::types::LogId;
use leasehold_core::State;
use openraft::{BasicNode, StoredMembership};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// What the state machine has applied so far.
#[derive(Clone, Debug, Default)]
pub struct AppliedState {
    /// The lock service's tables.
    pub state: State,
    /// The last log id applied to `state`; openraft resumes after it.
    pub last_applied: Option<LogId>,
    /// The last membership config applied, reported to openraft.
    pub last_membership: StoredMembership<u64, BasicNode>,
}

/// A clonable handle to the [`AppliedState`].
#[derive(Clone, Debug, Default)]
pub struct SharedState(Arc<RwLock<AppliedState>>);

impl SharedState {
    /// Runs `f` on the current state under the read lock. Keep `f` short.
    pub fn read<T>(&self, f: impl FnOnce(&State) -> T) -> T {
        f(&self.read_guard().state)
    }

    /// Runs `f` on the whole applied state (state, last applied, membership).
    pub fn read_applied<T>(&self, f: impl FnOnce(&AppliedState) -> T) -> T {
        f(&self.read_guard())
    }

    /// The last applied log id.
    pub fn last_applied(&self) -> Option<LogId> {
        self.read_guard().last_applied
    }

    /// Runs `f` under the write lock: only the state machine writes.
    pub(crate) fn write<T>(&self, f: impl FnOnce(&mut AppliedState) -> T) -> T {
        f(&mut self.write_guard())
    }

    /// A poisoned lock means an apply panicked half-way: the state may be torn,
    /// so serving from it would be wrong. Crash instead.
    fn read_guard(&self) -> RwLockReadGuard<'_, AppliedState> {
        self.0
            .read()
            .expect("state lock poisoned: an apply panicked, the state may be torn")
    }

    fn write_guard(&self) -> RwLockWriteGuard<'_, AppliedState> {
        self.0
            .write()
            .expect("state lock poisoned: an apply panicked, the state may be torn")
    }
}
