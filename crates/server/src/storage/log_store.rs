//! The Raft log, vote and log pointers in redb.
//!
//! Each `append` call is one write transaction committed with
//! `Durability::Immediate` (one fsync), and only then is openraft's flush
//! callback called. Writes run on tokio's blocking pool; reads are MVCC
//! snapshots and run inline.

use super::{blocking, DbError, LOG, META};
use crate::raft::types::{LogId, TypeConfig};
use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{Entry, OptionalSend, RaftLogReader, StorageError, StorageIOError, Vote};
use redb::{Database, Durability, ReadableDatabase, ReadableTable};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

/// `META` key of the vote.
const VOTE: &str = "vote";
/// `META` key of the last purged log id.
const LAST_PURGED: &str = "last_purged";
/// `META` key of the committed log id.
const COMMITTED: &str = "committed";

/// The log half of the storage. Cheap to clone: clones share the database,
/// and a clone is its own [`RaftLogReader`].
#[derive(Clone)]
pub struct LogStore {
    /// The file shared with the state machine store.
    db: Arc<Database>,
}

impl LogStore {
    pub(crate) fn new(db: Arc<Database>) -> Self {
        Self { db }
    }

    /// Reads and decodes one `META` record.
    fn read_meta<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, DbError> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(META)?;
        let Some(bytes) = table.get(key)? else {
            return Ok(None);
        };
        Ok(Some(postcard::from_bytes(bytes.value())?))
    }

    /// Encodes and writes one `META` record in its own transaction.
    async fn write_meta<T: Serialize + Sync>(
        &self,
        key: &'static str,
        value: &T,
        durability: Durability,
    ) -> Result<(), DbError> {
        let bytes = postcard::to_allocvec(value)?;
        let db = self.db.clone();
        blocking(move || {
            let mut txn = db.begin_write()?;
            txn.set_durability(durability)?;
            txn.open_table(META)?.insert(key, bytes.as_slice())?;
            txn.commit()?;
            Ok(())
        })
        .await
    }

    /// Reads the entries whose index is within `range`, in order.
    fn read_entries(
        &self,
        range: (Bound<u64>, Bound<u64>),
    ) -> Result<Vec<Entry<TypeConfig>>, DbError> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(LOG)?;
        let mut entries = Vec::new();
        for item in table.range::<u64>(range)? {
            let (_index, bytes) = item?;
            entries.push(postcard::from_bytes(bytes.value())?);
        }
        Ok(entries)
    }

    /// The log id of the last entry present, if any.
    fn last_entry_log_id(&self) -> Result<Option<LogId>, DbError> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(LOG)?;
        let Some((_index, bytes)) = table.last()? else {
            return Ok(None);
        };
        let entry: Entry<TypeConfig> = postcard::from_bytes(bytes.value())?;
        Ok(Some(entry.log_id))
    }

    /// Writes the encoded entries in one fsynced transaction.
    async fn write_entries(&self, encoded: Vec<(u64, Vec<u8>)>) -> Result<(), DbError> {
        let db = self.db.clone();
        blocking(move || {
            let mut txn = db.begin_write()?;
            txn.set_durability(Durability::Immediate)?;
            {
                let mut table = txn.open_table(LOG)?;
                for (index, bytes) in &encoded {
                    table.insert(*index, bytes.as_slice())?;
                }
            }
            txn.commit()?;
            Ok(())
        })
        .await
    }

    /// Removes every entry within `range` and, if given, records the last
    /// purged log id, in one fsynced transaction.
    async fn remove_entries(
        &self,
        range: (Bound<u64>, Bound<u64>),
        last_purged: Option<LogId>,
    ) -> Result<(), DbError> {
        let last_purged = last_purged
            .map(|id| postcard::to_allocvec(&id))
            .transpose()?;
        let db = self.db.clone();
        blocking(move || {
            let mut txn = db.begin_write()?;
            txn.set_durability(Durability::Immediate)?;
            txn.open_table(LOG)?
                .retain_in::<u64, _>(range, |_, _| false)?;
            if let Some(bytes) = &last_purged {
                txn.open_table(META)?
                    .insert(LAST_PURGED, bytes.as_slice())?;
            }
            txn.commit()?;
            Ok(())
        })
        .await
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>, StorageError<u64>> {
        let bounds = (range.start_bound().cloned(), range.end_bound().cloned());
        Ok(self
            .read_entries(bounds)
            .map_err(|e| StorageIOError::read_logs(&e))?)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<u64>> {
        let last_purged_log_id: Option<LogId> = self
            .read_meta(LAST_PURGED)
            .map_err(|e| StorageIOError::read_logs(&e))?;
        let last_log_id = self
            .last_entry_log_id()
            .map_err(|e| StorageIOError::read_logs(&e))?
            .or(last_purged_log_id);
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
            .write_meta(VOTE, vote, Durability::Immediate)
            .await
            .map_err(|e| StorageIOError::write_vote(&e))?)
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<u64>>, StorageError<u64>> {
        Ok(self
            .read_meta(VOTE)
            .map_err(|e| StorageIOError::read_vote(&e))?)
    }

    /// Not fsynced on its own: it becomes durable with the next append or
    /// vote. A lost update only means re-applying less at start-up.
    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError<u64>> {
        Ok(self
            .write_meta(COMMITTED, &committed, Durability::None)
            .await
            .map_err(|e| StorageIOError::write(&e))?)
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError<u64>> {
        let committed: Option<Option<LogId>> = self
            .read_meta(COMMITTED)
            .map_err(|e| StorageIOError::read(&e))?;
        Ok(committed.flatten())
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
        let encoded = entries
            .into_iter()
            .map(|entry| Ok((entry.log_id.index, postcard::to_allocvec(&entry)?)))
            .collect::<Result<Vec<_>, DbError>>()
            .map_err(|e| StorageIOError::write_logs(&e))?;
        let started = std::time::Instant::now();
        let written = self.write_entries(encoded).await;
        metrics::histogram!("leasehold_log_append_seconds").record(started.elapsed().as_secs_f64());
        match written {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(error) => {
                callback.log_io_completed(Err(std::io::Error::other(error.to_string())));
                Err(StorageIOError::write_logs(&error).into())
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError<u64>> {
        let range = (Bound::Included(log_id.index), Bound::Unbounded);
        Ok(self
            .remove_entries(range, None)
            .await
            .map_err(|e| StorageIOError::write_logs(&e))?)
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError<u64>> {
        let range = (Bound::Unbounded, Bound::Included(log_id.index));
        Ok(self
            .remove_entries(range, Some(log_id))
            .await
            .map_err(|e| StorageIOError::write_logs(&e))?)
    }
}
