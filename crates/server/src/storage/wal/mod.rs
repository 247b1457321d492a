//! The Raft log as a segmented write-ahead log in `<data dir>/log/`.
//!
//! **Why not redb**: openraft 0.9 awaits each log flush before the next
//! append, so the append latency caps throughput. A redb durable commit
//! (copy-on-write B-tree pages, then fsync) measured ~780 µs p50 per append
//! under 64 clients; writing one buffer at the tail of a zero-filled file and
//! calling `fdatasync` costs about one device flush.
//!
//! Layout (one purpose per file):
//! - `record`: `[len u32][crc32 u32][postcard Entry]` records;
//! - `segment`: `log-<first index:020>.wal` files, zero-filled ahead of use;
//! - `index`: the in-memory index → (segment, offset, length);
//! - `recovery`: the scan at open that stops at a torn tail and refuses a
//!   damaged record;
//! - `offline`: record places and a torn tail made on a stopped node's log;
//! - `committed`: the committed log id, which is not fsynced.
//!
//! An `append` call's entries become one buffer, written with one `pwrite`
//! at the tail of the current segment (or of a new one, if they do not fit)
//! by [`Wal::write`], and made durable by [`Wal::sync`] (`fdatasync`, on
//! the log's sync thread: see `storage::log_sync`; openraft 0.9 awaits that
//! flush before it appends or truncates again). Truncate erases the cut-off
//! bytes and deletes the later segments, durably, so recovery cannot bring
//! them back; purge drops whole segments whose entries are all purged (the
//! purged id itself is stored by the caller, durably, before). Reads
//! `pread` the records back (from the page cache, in practice) and check
//! their crc.
//!
//! openraft keeps the log contiguous (it truncates before overwriting and
//! only skips ahead after a purge, which recovery accounts for). Its
//! conformance suite does not: an overlapping append truncates first, and an
//! append after a gap starts a new segment; such a gap is not trusted by
//! recovery (the log ends before it), since it looks like the left-over of
//! an interrupted truncate.
//!
//! Locking: `writer` serializes the mutations (openraft issues them one at a
//! time anyway); `state` is held only to look up or update the index, never
//! across I/O, so readers (replication, apply) are not blocked by a flush.

mod committed;
mod fault;
mod index;
mod offline;
mod record;
mod recovery;
mod segment;

pub(crate) use committed::CommittedFile;
pub use fault::FSYNC_FAIL_AFTER_ENV;
pub use offline::{rewrite_wal_record_format, tear_wal_tail, wal_records, RecordPlace, TornTail};

use crate::raft::types::{LogId, TypeConfig};
use crate::storage::{power_cut, DbError, DiskHealth};
use fault::Fsync;
use index::{Index, Slot};
use openraft::Entry;
use record::{Header, HEADER};
use segment::{Preallocator, Segment};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// The default size of a segment file.
pub const DEFAULT_SEGMENT_BYTES: u64 = 64 << 20;

/// The log's directory inside the data dir.
pub const LOG_DIR: &str = "log";

/// Whether `<data_dir>/log` holds a segment file.
pub(crate) fn has_segments(data_dir: &Path) -> bool {
    segment::list(&data_dir.join(LOG_DIR)).is_ok_and(|firsts| !firsts.is_empty())
}

/// Entries written by [`Wal::write`], not yet fsynced: what
/// [`Wal::sync`] must sync to make them durable.
#[derive(Debug)]
pub(crate) struct Written {
    /// The segment written to; `None`: nothing was written.
    file: Option<Arc<File>>,
}

impl Written {
    /// Nothing written (an append of no entries).
    pub(crate) fn nothing() -> Written {
        Written { file: None }
    }

    /// Whether `self` and `other` went to the same segment, so one fsync
    /// makes both durable.
    pub(crate) fn same_segment(&self, other: &Written) -> bool {
        match (&self.file, &other.file) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// The entries of one `append` call, encoded as records in one buffer.
pub(crate) struct Encoded {
    /// The records, back to back.
    buf: Vec<u8>,
    /// Each record's log id and payload length, in order.
    records: Vec<(LogId, u32)>,
}

impl Encoded {
    /// Encodes `entries` (consecutive indexes) into one buffer.
    pub fn new(entries: impl IntoIterator<Item = Entry<TypeConfig>>) -> Result<Self, DbError> {
        let mut encoded = Encoded {
            buf: Vec::new(),
            records: Vec::new(),
        };
        for entry in entries {
            let first = encoded.records.is_empty();
            let len = record::encode_entry(&mut encoded.buf, &entry, first)?;
            encoded.records.push((entry.log_id, len));
        }
        Ok(encoded)
    }
}

/// The segmented log. Shared (`Arc`) by the log store and its readers.
pub(crate) struct Wal {
    /// `<data dir>/log`.
    dir: PathBuf,
    /// Appends roll to a new segment rather than grow one past this.
    segment_bytes: u64,
    /// Held for each whole mutation (append, truncate, purge).
    writer: Mutex<Preallocator>,
    /// The segments and the index; held briefly, never across I/O.
    state: Mutex<State>,
    /// The appends' fsync (with its test hook).
    fsync: Fsync,
    /// Poisoned by a failed append fsync; then every append is refused.
    disk: Arc<DiskHealth>,
}

/// What the index and the segments look like.
struct State {
    /// In index order; the last is the tail, where appends go.
    segments: Vec<Segment>,
    /// The live entries.
    index: Index,
    /// The last purged log id.
    purged: Option<LogId>,
}

impl State {
    fn segment(&self, first: u64) -> Option<&Segment> {
        let at = self.segments.binary_search_by_key(&first, |s| s.first);
        at.ok().map(|at| &self.segments[at])
    }

    /// Removes from the list the segments, other than the tail, whose
    /// entries are all purged, and returns them.
    fn take_purged_segments(&mut self) -> Vec<Segment> {
        let Some(purged) = self.purged else {
            return Vec::new();
        };
        let tail = self.segments.len().saturating_sub(1);
        let doomed = self.segments[..tail]
            .iter()
            .take_while(|s| s.next <= purged.index + 1)
            .count();
        self.segments.drain(..doomed).collect()
    }
}

impl Wal {
    /// Opens (creating) `<data_dir>/log`, recovers its contents, erasing a
    /// torn tail, and forgets entries up to `purged`.
    pub fn open(
        data_dir: &Path,
        segment_bytes: u64,
        purged: Option<LogId>,
        disk: Arc<DiskHealth>,
    ) -> Result<Self, DbError> {
        let dir = data_dir.join(LOG_DIR);
        if !dir.is_dir() {
            std::fs::create_dir_all(&dir)?;
            segment::sync_dir(data_dir)?;
        }
        let recovered = recovery::recover(&dir, purged)?;
        let mut state = State {
            segments: recovered.segments,
            index: recovered.index,
            purged,
        };
        let doomed = state.take_purged_segments();
        remove_segments(&dir, &doomed)?;
        tracing::info!(
            last = ?state.index.last(),
            ?purged,
            segments = state.segments.len(),
            "log opened"
        );
        Ok(Self {
            writer: Mutex::new(Preallocator::new(&dir, segment_bytes)?),
            dir,
            segment_bytes,
            state: Mutex::new(state),
            fsync: Fsync::from_env(),
            disk,
        })
    }

    /// The log id of the last entry, if any is live.
    pub fn last_log_id(&self) -> Option<LogId> {
        lock(&self.state).index.last()
    }

    /// Writes the entries at the tail, not yet durable: they are readable
    /// at once (from the page cache), and durable once [`Wal::sync`] of the
    /// returned [`Written`] succeeds. A failure (`ENOSPC` while making a
    /// segment or writing) leaves the tail as it was, so the same `encoded`
    /// may be written again. A poisoned log refuses with
    /// [`DbError::Poisoned`].
    pub(crate) fn write(&self, encoded: &Encoded) -> Result<Written, DbError> {
        let mut preallocator = lock(&self.writer);
        if self.disk.check_poisoned().is_err() {
            return Err(DbError::Poisoned(self.dir.clone()));
        }
        let Some(&(first_id, _)) = encoded.records.first() else {
            return Ok(Written::nothing());
        };
        let first = first_id.index;
        let size = encoded.buf.len() as u64;
        let last = self.last_log_id();
        if last.is_some_and(|last| first <= last.index) {
            // openraft truncates before it overwrites; this is for callers
            // that do not (the conformance suite).
            self.truncate_held(first)?;
        } else if last.is_some_and(|last| first > last.index + 1) {
            tracing::warn!(
                ?last,
                first,
                "log append leaves a gap: recovery will end the log at it"
            );
        }
        let tail = {
            let state = lock(&self.state);
            state
                .segments
                .last()
                .filter(|s| s.next == first && (s.end == 0 || s.end + size <= self.segment_bytes))
                .map(|s| (s.file.clone(), s.end))
        };
        let (file, offset) = match tail {
            Some(tail) => tail,
            None => self.roll(&mut preallocator, first)?,
        };
        power_cut::write_at(&file, &encoded.buf, offset)?;

        let mut state = lock(&self.state);
        let tail = state.segments.last_mut().expect("the segment just written");
        let segment = tail.first;
        let mut at = offset;
        if let Some(&(last, _)) = encoded.records.last() {
            tail.next = last.index + 1;
        }
        tail.end = offset + size;
        if tail.end > self.segment_bytes / 2 {
            preallocator.prepare();
        }
        for &(log_id, len) in &encoded.records {
            state.index.push(Slot {
                log_id,
                segment,
                offset: at,
                len,
            });
            at += HEADER as u64 + u64::from(len);
        }
        Ok(Written { file: Some(file) })
    }

    /// Makes `written` durable (`fdatasync` of its segment). A failed fsync
    /// poisons the log (see [`DiskHealth`]): this and every later write
    /// fail with [`DbError::Poisoned`].
    pub(crate) fn sync(&self, written: &Written) -> Result<(), DbError> {
        let Some(file) = &written.file else {
            return Ok(());
        };
        if let Err(error) = self.fsync.sync(file) {
            self.disk.poison(&self.dir, &error);
            return Err(DbError::Poisoned(self.dir.clone()));
        }
        Ok(())
    }

    /// Starts a new tail segment at `first`; drops wholly purged ones.
    fn roll(
        &self,
        preallocator: &mut Preallocator,
        first: u64,
    ) -> Result<(Arc<File>, u64), DbError> {
        let segment = preallocator.create(first)?;
        let file = segment.file.clone();
        let doomed = {
            let mut state = lock(&self.state);
            state.segments.push(segment);
            state.take_purged_segments()
        };
        remove_segments(&self.dir, &doomed)?;
        Ok((file, 0))
    }

    /// The live entries with indexes in `start..end`, in order.
    pub fn read(&self, start: u64, end: u64) -> Result<Vec<Entry<TypeConfig>>, DbError> {
        // Contiguous records of one segment are read with one pread.
        let mut runs: Vec<(Arc<File>, u64, u64, u64)> = Vec::new(); // file, segment, offset, len
        let mut expected = Vec::new();
        {
            let state = lock(&self.state);
            for slot in state.index.range(start, end) {
                expected.push(slot.log_id);
                let bytes = HEADER as u64 + u64::from(slot.len);
                match runs.last_mut() {
                    Some(run) if run.1 == slot.segment && run.2 + run.3 == slot.offset => {
                        run.3 += bytes;
                    }
                    _ => {
                        let segment = state.segment(slot.segment).ok_or_else(|| {
                            DbError::Corrupt(format!("no segment {} in the log", slot.segment))
                        })?;
                        runs.push((segment.file.clone(), slot.segment, slot.offset, bytes));
                    }
                }
            }
        }
        let mut entries = Vec::new();
        let mut buf = Vec::new();
        for (file, _, offset, len) in runs {
            buf.resize(len as usize, 0);
            file.read_exact_at(&mut buf, offset)?;
            decode_records(&buf, &mut entries)?;
        }
        if !entries.iter().map(|e| e.log_id).eq(expected) {
            return Err(DbError::Corrupt("log records differ from the index".into()));
        }
        Ok(entries)
    }

    /// Removes the entries at `index` and after, durably.
    pub fn truncate(&self, index: u64) -> Result<(), DbError> {
        let _writer = lock(&self.writer);
        self.truncate_held(index)
    }

    /// [`Self::truncate`], with the writer lock held by the caller.
    fn truncate_held(&self, index: u64) -> Result<(), DbError> {
        let (file, from, to, doomed) = {
            let mut state = lock(&self.state);
            let Some(cut) = state.index.truncate(index) else {
                return Ok(());
            };
            let at = state
                .segments
                .binary_search_by_key(&cut.segment, |s| s.first)
                .map_err(|_| DbError::Corrupt(format!("no segment {} in the log", cut.segment)))?;
            let doomed: Vec<Segment> = state.segments.drain(at + 1..).collect();
            let segment = &mut state.segments[at];
            let to = segment.end;
            segment.end = cut.offset;
            segment.next = cut.log_id.index;
            (segment.file.clone(), cut.offset, to, doomed)
        };
        // Later segments go first, newest first: a crash half-way leaves a
        // prefix of the log, and recovery drops segments that do not follow.
        if !doomed.is_empty() {
            remove_segments(&self.dir, &doomed)?;
            segment::sync_dir(&self.dir)?;
        }
        // The cut record's header first, durably: whatever of the rest a
        // crash leaves behind then follows a zero header, which recovery
        // reads as the end, never as a damaged record (see `recovery`).
        if from < to {
            power_cut::write_at(&file, &[0; HEADER], from)?;
            self.sync_truncated(&file)?;
        }
        segment::write_zeros(&file, from, to)?;
        self.sync_truncated(&file)
    }

    /// fsyncs a truncation; a failure poisons the log like an append's.
    fn sync_truncated(&self, file: &File) -> Result<(), DbError> {
        if let Err(error) = file.sync_data() {
            self.disk.poison(&self.dir, &error);
            return Err(DbError::Poisoned(self.dir.clone()));
        }
        power_cut::synced(file);
        Ok(())
    }

    /// Forgets entries up to `log_id` and deletes the segments holding only
    /// such entries. The caller has stored `log_id` durably already.
    pub fn purge(&self, log_id: LogId) -> Result<(), DbError> {
        let _writer = lock(&self.writer);
        let doomed = {
            let mut state = lock(&self.state);
            if state.purged.is_some_and(|purged| purged >= log_id) {
                return Ok(());
            }
            state.purged = Some(log_id);
            state.index.purge(log_id.index);
            state.take_purged_segments()
        };
        // No directory fsync: a deleted segment that comes back after a
        // crash holds only purged entries, which recovery skips.
        remove_segments(&self.dir, &doomed)
    }
}

/// Decodes the back-to-back records in `buf`, checking each crc.
fn decode_records(mut buf: &[u8], entries: &mut Vec<Entry<TypeConfig>>) -> Result<(), DbError> {
    while !buf.is_empty() {
        let header: [u8; HEADER] = buf
            .get(..HEADER)
            .and_then(|h| h.try_into().ok())
            .ok_or_else(|| DbError::Corrupt("short log record".into()))?;
        let Header::Record { len, .. } = record::parse_header(header) else {
            return Err(DbError::Corrupt("log record erased under a reader".into()));
        };
        let payload = buf
            .get(HEADER..HEADER + len as usize)
            .filter(|payload| record::verify(header, payload).is_some())
            .ok_or_else(|| DbError::Corrupt("log record fails its checksum".into()))?;
        entries.push(record::decode_entry(payload)?);
        buf = &buf[HEADER + len as usize..];
    }
    Ok(())
}

/// Deletes segment files, the newest first.
fn remove_segments(dir: &Path, segments: &[Segment]) -> Result<(), DbError> {
    for segment in segments.iter().rev() {
        std::fs::remove_file(segment.path(dir))?;
    }
    Ok(())
}

/// Locks a mutex. A poisoned one means a panic mid-update of the log's
/// bookkeeping: continuing could write at a wrong offset, so crash instead.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .expect("log lock poisoned: a log operation panicked half-way")
}
