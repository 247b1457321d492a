//! openraft's storage conformance suite against the redb stores.
//!
//! Every test of the suite gets a fresh data dir, removed when it ends.

use leasehold_server::raft::types::TypeConfig;
use leasehold_server::storage::{self, LogStore, NoopListener, StateMachineStore};
use openraft::testing::{StoreBuilder, Suite};
use openraft::{StorageError, StorageIOError};
use std::sync::Arc;
use tempfile::TempDir;

/// Opens both stores in a new temp dir; the `TempDir` guard removes it.
struct RedbBuilder;

impl StoreBuilder<TypeConfig, LogStore, StateMachineStore, TempDir> for RedbBuilder {
    async fn build(&self) -> Result<(TempDir, LogStore, StateMachineStore), StorageError<u64>> {
        let dir = tempfile::tempdir().map_err(|e| StorageIOError::write(&e))?;
        let (log, state_machine) = storage::open(dir.path(), Arc::new(NoopListener))
            .map_err(|e| StorageIOError::write(&e))?;
        Ok((dir, log, state_machine))
    }
}

#[test]
fn openraft_storage_suite() {
    Suite::test_all(RedbBuilder).expect("the redb stores pass openraft's storage suite");
}
