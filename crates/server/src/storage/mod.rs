//! Durable openraft storage on redb.
//!
//! [`open`] opens one redb file, `<data dir>/leasehold.redb`, and hands out the
//! two halves openraft 0.9 (storage-v2) asks for, sharing that file:
//!
//! - [`LogStore`]: the Raft log (one postcard-encoded `Entry` per index), the
//!   vote, the last purged log id and the committed log id.
//! - [`StateMachineStore`]: the in-memory [`leasehold_core::State`], applied
//!   in log order, plus the latest snapshot, which is persisted.
//!
//! **Why redb**: pure Rust with no dependencies (no C++ build on a 2-core
//! box), ACID transactions, and one file lock that keeps a second server off
//! the same data dir. A durable commit costs one fsync.
//!
//! **Why one batch per entry**: openraft 0.9 awaits each log flush before the
//! next append, so throughput is flushes per second times commands per entry.
//! The proposer coalesces commands into a [`Batch`](crate::raft::types::Batch)
//! and this layer writes each `append` call in one transaction.
//!
//! **Durability promise**: when openraft's flush callback fires, the entries
//! are fsynced; a saved vote is fsynced before `save_vote` returns; a snapshot
//! is fsynced before it is returned or reported installed. The state machine
//! itself lives in memory: on restart it is loaded from the latest snapshot and
//! openraft re-applies the committed entries after it (the committed log id is
//! persisted lazily, riding on the next fsync; losing it only means re-applying
//! less at start-up, never applying something uncommitted).

mod listener;
mod log_store;
mod shared;
mod snapshot_store;
mod state_machine;

pub use listener::{ApplyListener, NoopListener};
pub use log_store::LogStore;
pub use shared::{AppliedState, SharedState};
pub use state_machine::StateMachineStore;

use redb::{Database, TableDefinition};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The database file's name inside the data dir.
pub const DB_FILE_NAME: &str = "leasehold.redb";

/// Log index → postcard bytes of `Entry<TypeConfig>`.
pub(crate) const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("log");
/// Small named records of the log store (keys below), postcard-encoded.
pub(crate) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// The latest snapshot: its meta, its bytes and the id counter.
pub(crate) const SNAPSHOT: TableDefinition<&str, &[u8]> = TableDefinition::new("snapshot");

/// Opens (creating if missing) the storage in `dir` and loads the state
/// machine from the latest snapshot, if any, calling `listener.reset` then.
///
/// Both stores share one redb `Database`; drop both to release the file lock.
pub fn open(
    dir: &Path,
    listener: Arc<dyn ApplyListener>,
) -> Result<(LogStore, StateMachineStore), OpenError> {
    std::fs::create_dir_all(dir).map_err(|source| OpenError::CreateDir {
        dir: dir.to_path_buf(),
        source,
    })?;
    let path = dir.join(DB_FILE_NAME);
    let db = match Database::create(&path) {
        Ok(db) => db,
        Err(redb::DatabaseError::DatabaseAlreadyOpen) => {
            return Err(OpenError::AlreadyOpen { path });
        }
        Err(source) => {
            return Err(OpenError::Database {
                path,
                source: source.into(),
            })
        }
    };
    create_tables(&db).map_err(|source| OpenError::Database {
        path: path.clone(),
        source,
    })?;
    let db = Arc::new(db);
    let state_machine = StateMachineStore::load(db.clone(), listener)
        .map_err(|source| OpenError::Load { path, source })?;
    Ok((LogStore::new(db), state_machine))
}

/// Creates every table once so that read transactions never meet a missing one.
fn create_tables(db: &Database) -> Result<(), redb::Error> {
    let txn = db.begin_write()?;
    txn.open_table(LOG)?;
    txn.open_table(META)?;
    txn.open_table(SNAPSHOT)?;
    txn.commit()?;
    Ok(())
}

/// Why [`open`] failed. Each variant names the path involved.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The data dir could not be created.
    #[error("cannot create data dir {dir}: {source}")]
    CreateDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    /// Another process (or another `open` in this one) holds the file lock.
    #[error(
        "{path} is locked by another process: is another `leasehold serve` using this data dir?"
    )]
    AlreadyOpen { path: PathBuf },
    /// redb could not open or initialise the file.
    #[error("cannot open database {path}: {source} (check permissions and free disk space)")]
    Database { path: PathBuf, source: redb::Error },
    /// The stored snapshot could not be read back.
    #[error("cannot load the snapshot stored in {path}: {source}")]
    Load { path: PathBuf, source: DbError },
}

/// A failure inside the storage layer: redb, encoding, or the blocking pool.
/// Trait methods wrap it in openraft's `StorageError` with the operation.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The database failed.
    #[error("redb: {0}")]
    Redb(#[from] redb::Error),
    /// A stored value did not decode, or a value did not encode.
    #[error("postcard: {0}")]
    Codec(#[from] postcard::Error),
    /// The blocking task running the write was cancelled.
    #[error("blocking task: {0}")]
    Join(#[from] tokio::task::JoinError),
}

/// redb has one error type per call; all of them convert into `redb::Error`.
macro_rules! redb_error_into_db_error {
    ($($error:ty),*) => {$(
        impl From<$error> for DbError {
            fn from(error: $error) -> Self {
                DbError::Redb(error.into())
            }
        }
    )*};
}
redb_error_into_db_error!(
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError,
    redb::SetDurabilityError
);

/// Runs a write (which may fsync) on tokio's blocking pool so it never stalls
/// a runtime worker. A panic inside `f` is resumed here.
pub(crate) async fn blocking<T, F>(f: F) -> Result<T, DbError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, DbError> + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => result,
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Err(error) => Err(error.into()),
    }
}
