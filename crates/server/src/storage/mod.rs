//! Durable openraft storage: a segmented write-ahead log for the Raft log,
//! redb for everything else.
//!
//! [`open`] hands out the two halves openraft 0.9 (storage-v2) asks for:
//!
//! - [`LogStore`]: the Raft log in `<data dir>/log/` (see [`wal`]: segment
//!   files of checksummed postcard-encoded entries), plus the vote and the
//!   last purged log id in redb and the committed log id in a small file.
//! - [`StateMachineStore`]: the in-memory [`leasehold_core::State`], applied
//!   in log order, plus the latest snapshot: its meta and checksums in redb
//!   (`<data dir>/leasehold.redb`), its bytes in `<data dir>/snapshots/`
//!   (see `snapshot_file`).
//!
//! The log store also hands out an [`IdentityStore`]: this node's cluster id
//! and the nodes it has seen take part, in the same redb file.
//!
//! **Why a WAL for the log and redb for the rest**: openraft 0.9 awaits each
//! log flush before the next append, so the append latency caps throughput:
//! a redb durable commit cost ~780 µs p50 under load, a write + `fdatasync`
//! into a zero-filled segment a fraction of that. The vote, the purged id and
//! snapshots change rarely; redb gives them atomic durable updates, and its
//! file lock keeps a second server off the same data dir.
//!
//! **Why one batch per entry**: the proposer coalesces commands into a
//! [`Batch`](crate::raft::types::Batch) and each `append` call is one write
//! and one fsync.
//!
//! **Durability promise**: when openraft's flush callback fires, the entries
//! are fsynced; a saved vote is fsynced before `save_vote` returns; a
//! truncation or purge is durable before it returns; a snapshot is fsynced
//! before it is returned or reported installed. The state machine itself
//! lives in memory: on restart it is loaded from the latest snapshot and
//! openraft re-applies the committed entries after it (the committed log id
//! is written without fsync; losing it only means re-applying less at
//! start-up, never applying something uncommitted).

mod disk;
pub mod format;
mod identity_store;
mod listener;
mod log_store;
mod log_sync;
mod meta;
mod power_cut;
mod shared;
mod snapshot_file;
mod snapshot_store;
mod state_machine;
pub mod wal;

pub use disk::{free_bytes, DiskFault, DiskHealth, NoSpaceToStart};
pub use format::DATA_FORMAT;
pub use identity_store::IdentityStore;
pub use listener::{ApplyListener, NoopListener};
pub use log_store::LogStore;
pub use power_cut::{
    spawn_trigger as spawn_power_cut_trigger, POWER_CUT_EXIT_CODE, POWER_LOSS_ENV,
};
pub use shared::{AppliedState, SharedState};
pub(crate) use state_machine::encode as encode_snapshot;
pub use state_machine::{decode_state, encode_state, StateMachineStore};
pub use wal::{
    rewrite_wal_record_format, tear_wal_tail, wal_records, RecordPlace, TornTail,
    FSYNC_FAIL_AFTER_ENV,
};

use redb::{Database, TableDefinition};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The database file's name inside the data dir.
pub const DB_FILE_NAME: &str = "leasehold.redb";

/// redb's page cache. Its default, 1 GiB, kept the pages of every snapshot
/// written resident: with a million locks held, the server's RSS grew by
/// the snapshot's size beside the state it encodes. The file holds a few
/// small records and the snapshot blob, each written and read whole, once;
/// a cache earns nothing on those.
const DB_CACHE_BYTES: usize = 4 << 20;

/// Small named records (the log store's vote and purged id, the cluster
/// identity), postcard-encoded; read and written through [`meta`].
pub(crate) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// The latest snapshot: its meta, its bytes and the id counter.
pub(crate) const SNAPSHOT: TableDefinition<&str, &[u8]> = TableDefinition::new("snapshot");

/// Tunables of [`open_with`].
#[derive(Clone, Copy, Debug)]
pub struct StorageOptions {
    /// The size of a log segment file (a larger append gets a segment of
    /// its own). Tests use small ones to exercise roll-over.
    pub segment_bytes: u64,
}

impl Default for StorageOptions {
    fn default() -> Self {
        Self {
            segment_bytes: wal::DEFAULT_SEGMENT_BYTES,
        }
    }
}

/// Opens (creating if missing) the storage in `dir` and loads the state
/// machine from the latest snapshot, if any, calling `listener.reset` then.
///
/// Both stores share one redb `Database`; drop both to release the file lock.
pub fn open(
    dir: &Path,
    listener: Arc<dyn ApplyListener>,
) -> Result<(LogStore, StateMachineStore), OpenError> {
    open_with(dir, listener, StorageOptions::default())
}

/// [`open`] with explicit [`StorageOptions`].
pub fn open_with(
    dir: &Path,
    listener: Arc<dyn ApplyListener>,
    options: StorageOptions,
) -> Result<(LogStore, StateMachineStore), OpenError> {
    std::fs::create_dir_all(dir).map_err(|source| OpenError::CreateDir {
        dir: dir.to_path_buf(),
        source,
    })?;
    let path = dir.join(DB_FILE_NAME);
    let db = match Database::builder()
        .set_cache_size(DB_CACHE_BYTES)
        .create(&path)
    {
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
    let marked = format::check_and_mark(&db, dir).map_err(|source| OpenError::Load {
        path: path.clone(),
        source,
    })?;
    marked.map_err(OpenError::NewerFormat)?;
    let db = Arc::new(db);
    let disk = Arc::new(DiskHealth::new(dir, options.segment_bytes));
    let first_segment_bytes = if wal::has_segments(dir) {
        0
    } else {
        options.segment_bytes
    };
    disk.check_at_start(first_segment_bytes)
        .map_err(OpenError::NoSpace)?;
    let log_store =
        LogStore::open(db.clone(), dir, disk.clone(), options.segment_bytes).map_err(|source| {
            OpenError::Log {
                dir: dir.join(wal::LOG_DIR),
                source,
            }
        })?;
    let state_machine = StateMachineStore::load(db, dir, listener, disk)
        .map_err(|source| OpenError::Load { path, source })?;
    Ok((log_store, state_machine))
}

/// Creates every table once so that read transactions never meet a missing one.
fn create_tables(db: &Database) -> Result<(), redb::Error> {
    let txn = db.begin_write()?;
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
    /// The data dir's filesystem has too little free space to start.
    #[error(transparent)]
    NoSpace(NoSpaceToStart),
    /// The log could not be opened or recovered.
    #[error("cannot open the log in {dir}: {source}")]
    Log { dir: PathBuf, source: DbError },
    /// The stored snapshot could not be read back.
    #[error("cannot load the snapshot stored in {path}: {source}")]
    Load { path: PathBuf, source: DbError },
    /// The data dir was written by a newer build.
    #[error(transparent)]
    NewerFormat(format::NewerFormat),
}

/// What an operator does about a damaged data dir, in every such error.
pub const WHAT_TO_DO_WHEN_DAMAGED: &str = "Restore this node's data dir from a backup; or, in a \
    cluster whose other members hold the data, remove this node (`leasehold member remove ID` on \
    a live member), start it with `--join` on an empty data dir, and add it again with \
    `leasehold member add ID ADDR`";

/// A failure inside the storage layer: redb, the log files, encoding, or the
/// blocking pool.
/// Trait methods wrap it in openraft's `StorageError` with the operation.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The database failed.
    #[error("redb: {0}")]
    Redb(#[from] redb::Error),
    /// A log file could not be read, written or synced.
    #[error("log i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The log's files contradict themselves (a bug, or outside tampering).
    #[error("log corrupt: {0}")]
    Corrupt(String),
    /// A log record is damaged and valid records follow it: not a torn
    /// tail but lost acknowledged entries (see `wal::recovery`).
    #[error(
        "corrupt log record at byte {offset} of {} ({why}), and a valid record follows at byte \
         {valid_offset} of {}: this is damage, not a write cut short by a crash, so the node \
         will not start rather than drop acknowledged entries. {}",
        .path.display(), .valid_path.display(), WHAT_TO_DO_WHEN_DAMAGED
    )]
    CorruptRecord {
        /// The segment file holding the bad record.
        path: PathBuf,
        /// The bad record's byte offset in it.
        offset: u64,
        /// What is wrong with it.
        why: &'static str,
        /// Where the valid record after it is: this segment or the next.
        valid_path: PathBuf,
        /// The valid record's byte offset in `valid_path`.
        valid_offset: u64,
    },
    /// A whole log record was written by a newer data format than this
    /// build reads (see `wal::record`).
    #[error(
        "the log record at byte {offset} of {} was written by data format {found}, newer than \
         this build reads (format {} and older): run the release that wrote it, or a newer one",
        .path.display(), format::DATA_FORMAT
    )]
    NewerRecord {
        /// The segment file holding the record.
        path: PathBuf,
        /// The record's byte offset in it.
        offset: u64,
        /// The format it names.
        found: u32,
    },
    /// Snapshot bytes (stored, sent by the leader, or in a backup) were
    /// written by a newer data format than this build reads.
    #[error(
        "the snapshot was written by data format {found}, newer than this build reads (format {} \
         and older): upgrade this node to the release of the node that wrote it",
        format::DATA_FORMAT
    )]
    NewerSnapshot {
        /// The format it names.
        found: u32,
    },
    /// The stored snapshot fails its checksum or does not decode.
    #[error(
        "the snapshot is damaged ({why}): the node will not start from it. {}",
        WHAT_TO_DO_WHEN_DAMAGED
    )]
    CorruptSnapshot {
        /// What is wrong with it.
        why: String,
    },
    /// A stored value did not decode, or a value did not encode.
    #[error("postcard: {0}")]
    Codec(#[from] postcard::Error),
    /// A failed fsync poisoned the log; the fault itself (with what to do)
    /// is logged once and answered to clients from [`DiskHealth`], so
    /// this, which openraft logs again and again, stays short.
    #[error("the log in {} is poisoned by a failed fsync: no writes until a restart", .0.display())]
    Poisoned(PathBuf),
    /// A snapshot's file could not be written.
    #[error("cannot write the snapshot file {}: {source} (check free space and permissions)", .path.display())]
    SnapshotFile {
        /// The file.
        path: PathBuf,
        source: std::io::Error,
    },
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
