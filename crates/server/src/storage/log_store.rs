//! The Raft log store: entries in the [`wal`](super::wal), the vote and the
//! last purged log id in redb, the committed log id in a small file.
//!
//! Each `append` call is one write of the WAL, inline, whose `fdatasync`
//! runs on the log's sync thread ([`LogSync`]); openraft's flush callback is
//! called once that fsync returned, and nothing commits or replies before.
//!
//! **Why the write is inline and the fsync is not**: the write is one
//! `pwrite` into the page cache (microseconds), and the entries must be
//! readable when `append` returns. The fsync is 200-300 µs of sleeping in
//! the kernel under load (about 100 µs on a quiet disk), which inline held
//! one of the runtime's workers while the replies of the batch before
//! waited to run. Measured with `leasehold bench
//! --workload uncontended --clients 64`, side by side on the 2-core box
//! (docs/DESIGN.md §6d, "Where a command's time goes"): fsync inline 24.1k,
//! 24.3k, 24.4k cycles/s; on the sync thread 25.3k, 25.9k, 26.2k (three
//! rounds alternating); contended hand-offs and keep-alives unchanged.
//!
//! An earlier build measured inline and `spawn_blocking` (write and fsync
//! on the blocking pool) as a tie; `spawn_blocking` also could not keep the
//! appends in order. Truncate and purge, rare and possibly long (zeroing,
//! unlinking), run on the blocking pool.

use super::log_sync::LogSync;
use super::wal::{CommittedFile, Encoded, Wal, Written};
use super::{blocking, meta, DbError, DiskHealth, IdentityStore};
use crate::raft::types::{LogId, TypeConfig};
use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{Entry, OptionalSend, RaftLogReader, StorageError, StorageIOError, Vote};
use redb::Database;
use serde::Serialize;
use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::Arc;

/// The first pause of an append waiting for free space; it doubles up to
/// [`NO_SPACE_PAUSE_MAX`].
const NO_SPACE_PAUSE_MIN: std::time::Duration = std::time::Duration::from_millis(50);
/// The longest pause between two tries of an append waiting for space.
const NO_SPACE_PAUSE_MAX: std::time::Duration = std::time::Duration::from_secs(1);

/// `META` key of the vote.
const VOTE: &str = "vote";
/// `META` key of the last purged log id.
const LAST_PURGED: &str = "last_purged";

/// The log half of the storage. Cheap to clone: clones share the WAL and
/// the database, and a clone is its own [`RaftLogReader`].
#[derive(Clone)]
pub struct LogStore {
    /// The file shared with the state machine store: vote, last purged.
    db: Arc<Database>,
    /// The entries.
    wal: Arc<Wal>,
    /// The committed log id.
    committed: Arc<CommittedFile>,
    /// Whether the disk takes writes (poisoned by a failed fsync, full).
    disk: Arc<DiskHealth>,
    /// The appends' fsyncs.
    sync: LogSync,
}

impl LogStore {
    /// Opens the WAL in `data_dir` (recovering it) next to `db`.
    pub(crate) fn open(
        db: Arc<Database>,
        data_dir: &Path,
        disk: Arc<DiskHealth>,
        segment_bytes: u64,
    ) -> Result<Self, DbError> {
        let purged = meta::read(&db, LAST_PURGED)?;
        let wal = Wal::open(data_dir, segment_bytes, purged, disk.clone())?;
        let committed = CommittedFile::open(&data_dir.join(super::wal::LOG_DIR))?;
        let wal = Arc::new(wal);
        Ok(Self {
            db,
            sync: LogSync::spawn(wal.clone())?,
            wal,
            committed: Arc::new(committed),
            disk,
        })
    }

    /// Whether this node's disk takes writes; shared with the server.
    pub fn disk_health(&self) -> Arc<DiskHealth> {
        self.disk.clone()
    }

    /// Writes, waiting out a full disk: a write that failed with `ENOSPC`
    /// made nothing durable, so the same bytes are written again at the
    /// same place once there is room (see [`super::disk`]). Meanwhile the
    /// proposer refuses new writes, since the free space is below what
    /// they need. Any other error is returned.
    async fn write_when_room(&self, encoded: &Encoded) -> Result<Written, DbError> {
        let mut pause = NO_SPACE_PAUSE_MIN;
        loop {
            match self.wal.write(encoded) {
                Err(DbError::Io(error)) if error.kind() == std::io::ErrorKind::StorageFull => {
                    tracing::warn!(
                        %error,
                        "log write found no space: nothing was written; retrying when space returns"
                    );
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(NO_SPACE_PAUSE_MAX);
                }
                written => return written,
            }
        }
    }

    /// Writes one `META` record, fsynced, on the blocking pool.
    async fn write_meta<T: Serialize + Sync>(
        &self,
        key: &'static str,
        value: &T,
    ) -> Result<(), DbError> {
        let bytes = postcard::to_allocvec(value)?;
        let db = self.db.clone();
        self.disk.room().await;
        blocking(move || meta::write_bytes(&db, key, &bytes)).await
    }

    /// The committed log index found at open (`None`: nothing committed,
    /// or the file is missing or torn): the entries up to it were applied
    /// before this process started, and applying them again is a replay.
    pub fn committed_index(&self) -> Option<u64> {
        self.committed.load().ok().flatten().map(|id| id.index)
    }

    /// The log id of the last entry in the log, if any (at start: what the
    /// log held before this process, see `api::read`).
    pub fn last_log_id(&self) -> Option<LogId> {
        self.wal.last_log_id()
    }

    /// The record of this node's cluster identity, in the same database.
    pub fn identity_store(&self) -> IdentityStore {
        IdentityStore::new(self.db.clone())
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>, StorageError<u64>> {
        let start = match range.start_bound() {
            Bound::Included(&i) => i,
            Bound::Excluded(&i) => i.saturating_add(1),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&i) => i.saturating_add(1),
            Bound::Excluded(&i) => i,
            Bound::Unbounded => u64::MAX,
        };
        Ok(self
            .wal
            .read(start, end)
            .map_err(|e| StorageIOError::read_logs(&e))?)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<u64>> {
        let last_purged_log_id: Option<LogId> =
            meta::read(&self.db, LAST_PURGED).map_err(|e| StorageIOError::read_logs(&e))?;
        let last_log_id = self.wal.last_log_id().or(last_purged_log_id);
        Ok(LogState {
            last_purged_log_id,
            last_log_id,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<u64>) -> Result<(), StorageError<u64>> {
        Ok(self
            .write_meta(VOTE, vote)
            .await
            .map_err(|e| StorageIOError::write_vote(&e))?)
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<u64>>, StorageError<u64>> {
        Ok(meta::read(&self.db, VOTE).map_err(|e| StorageIOError::read_vote(&e))?)
    }

    /// Not fsynced: one `pwrite` into the page cache, inline. A lost update
    /// (power cut) only means re-applying less at start-up.
    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError<u64>> {
        Ok(self
            .committed
            .save(committed)
            .map_err(|e| StorageIOError::write(&e))?)
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError<u64>> {
        Ok(self
            .committed
            .load()
            .map_err(|e| StorageIOError::read(&e))?)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError<u64>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let encoded = Encoded::new(entries).map_err(|e| StorageIOError::write_logs(&e))?;
        let started = std::time::Instant::now();
        match self.write_when_room(&encoded).await {
            Ok(written) => {
                let done = Box::new(move |synced| callback.log_io_completed(synced));
                self.sync.submit(written, started, done);
                Ok(())
            }
            Err(error) => {
                callback.log_io_completed(Err(std::io::Error::other(error.to_string())));
                Err(StorageIOError::write_logs(&error).into())
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError<u64>> {
        let wal = self.wal.clone();
        Ok(blocking(move || wal.truncate(log_id.index))
            .await
            .map_err(|e| StorageIOError::write_logs(&e))?)
    }

    /// Stores the purged id durably first, then drops the entries: a crash
    /// in between leaves purged entries in the files, which recovery skips.
    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError<u64>> {
        self.write_meta(LAST_PURGED, &log_id)
            .await
            .map_err(|e| StorageIOError::write_logs(&e))?;
        let wal = self.wal.clone();
        Ok(blocking(move || wal.purge(log_id))
            .await
            .map_err(|e| StorageIOError::write_logs(&e))?)
    }
}
