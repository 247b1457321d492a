//! openraft's storage conformance suite against the WAL + redb stores.
//!
//! Every test of the suite gets a fresh data dir, removed when it ends. The
//! suite runs twice: with the default segment size, and with segments so
//! small that nearly every append rolls over to a new one.

use leasehold_server::raft::types::TypeConfig;
use leasehold_server::storage::{self, LogStore, NoopListener, StateMachineStore, StorageOptions};
use openraft::testing::{StoreBuilder, Suite};
use openraft::{StorageError, StorageIOError};
use std::sync::Arc;
use tempfile::TempDir;

/// Opens both stores in a new temp dir; the `TempDir` guard removes it.
struct Builder(StorageOptions);

impl StoreBuilder<TypeConfig, LogStore, StateMachineStore, TempDir> for Builder {
    async fn build(&self) -> Result<(TempDir, LogStore, StateMachineStore), StorageError<u64>> {
        let dir = tempfile::tempdir().map_err(|e| StorageIOError::write(&e))?;
        let (log, state_machine) = storage::open_with(dir.path(), Arc::new(NoopListener), self.0)
            .map_err(|e| StorageIOError::write(&e))?;
        Ok((dir, log, state_machine))
    }
}

#[test]
fn openraft_storage_suite() {
    Suite::test_all(Builder(StorageOptions::default()))
        .expect("the stores pass openraft's storage suite");
}

#[test]
fn openraft_storage_suite_with_tiny_segments() {
    Suite::test_all(Builder(StorageOptions { segment_bytes: 64 }))
        .expect("the stores pass openraft's storage suite across segment roll-overs");
}
